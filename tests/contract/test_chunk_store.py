"""ChunkStore contract: every adapter must pass every test here."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import ModelMismatch, RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.models import CONTEXT_LINES, SearchFilters, split_lines
from codebase_mcp_search.core.ports import ChunkStore
from tests.factories import FileBatch, file_batch, repo, symbol_of

NO_FILTER = SearchFilters()


async def _seed(store: ChunkStore) -> None:
    await store.save_repository(repo("r1", "/repos/r1", "one"))
    await store.save_repository(repo("r2", "/repos/r2", "two"))
    await store.replace_files(
        "r1",
        [
            file_batch(
                "r1",
                "src/auth/login.py",
                ["def login(user, password):", "    check"],
                vectors=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            ),
            file_batch(
                "r1",
                "src/a_b/util.py",
                ["def parse_config(path): return path"],
                vectors=[[0.6, 0.8, 0.0]],
            ),
            file_batch(
                "r1",
                "src/aXb/other.py",
                ["def parse_json(text): return text"],
                vectors=[[0.0, 0.0, 1.0]],
            ),
            file_batch(
                "r1",
                "docs/100%/guide.md",
                ["# Login guide", "how to login"],
                vectors=[[0.8, 0.6, 0.0], [0.0, 0.6, 0.8]],
            ),
        ],
    )
    await store.replace_files(
        "r2",
        [file_batch("r2", "main.go", ["func login() {}"], vectors=[[0.9, 0.0, 0.436]])],
    )


def test_is_a_chunk_store(chunk_store: ChunkStore) -> None:
    assert isinstance(chunk_store, ChunkStore)


async def test_repositories_round_trip_with_live_counts(chunk_store: ChunkStore) -> None:
    await _seed(chunk_store)
    r1 = await chunk_store.get_repository("r1")
    assert (r1.name, r1.path, r1.file_count, r1.chunk_count) == ("one", "/repos/r1", 4, 6)
    found = await chunk_store.find_repository("/repos/r2")
    assert found is not None and found.id == "r2" and found.chunk_count == 1
    assert await chunk_store.find_repository("/nowhere") is None
    assert [r.name for r in await chunk_store.list_repositories()] == ["one", "two"]


async def test_unknown_repository_raises(chunk_store: ChunkStore) -> None:
    with pytest.raises(RepositoryNotFound):
        await chunk_store.get_repository("missing")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.delete_repository("missing")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.replace_files("missing", [file_batch("missing", "a.py", ["x = 1"])])


async def test_hit_contexts_are_the_lines_around_each_chunk(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo("r1", "/repos/r1", "one"))
    pieces = [f"line_{i} = {i}" for i in range(1, 15)] + ["def f():\n    return 1"]
    pieces += [f"tail_{i} = {i}" for i in range(1, 13)]
    await chunk_store.replace_files("r1", [file_batch("r1", "a.py", pieces)])
    batch = file_batch("r1", "b.py", ["only = 1"])
    await chunk_store.replace_files("r1", [batch])
    chunks = {c.content: c for c in await chunk_store.chunks("r1")}
    text = "\n".join(pieces)
    lines = split_lines(text)
    wanted = [chunks["def f():\n    return 1"], chunks["line_1 = 1"], chunks["tail_12 = 12"]]
    got = await chunk_store.hit_contexts([*wanted, batch.chunks[0]])
    for c in wanted:
        assert got[c.id] == (
            "\n".join(lines[max(0, c.start_line - 1 - CONTEXT_LINES) : c.start_line - 1]),
            "\n".join(lines[c.end_line : c.end_line + CONTEXT_LINES]),
        )
    f = chunks["def f():\n    return 1"]
    assert got[f.id][0].splitlines() == [f"line_{i} = {i}" for i in range(5, 15)]
    assert got[f.id][1].splitlines() == [f"tail_{i} = {i}" for i in range(1, 11)]
    assert got[batch.chunks[0].id] == ("", "")
    assert await chunk_store.hit_contexts([]) == {}
    # A chunk no longer indexed (its file re-written without it, or deleted) has none.
    await chunk_store.replace_files("r1", [file_batch("r1", "a.py", ["x = 1"])])
    await chunk_store.delete_files("r1", ["b.py"])
    assert await chunk_store.hit_contexts([f, batch.chunks[0]]) == {}


async def test_file_hashes_texts_and_chunks(chunk_store: ChunkStore) -> None:
    await _seed(chunk_store)
    hashes = await chunk_store.file_hashes("r1")
    assert sorted(hashes) == [
        "docs/100%/guide.md",
        "src/aXb/other.py",
        "src/a_b/util.py",
        "src/auth/login.py",
    ]
    some = await chunk_store.file_hashes("r1", ["src/a_b/util.py", "nope.py", "src/a%b/x.py"])
    assert some == {"src/a_b/util.py": hashes["src/a_b/util.py"]}
    assert await chunk_store.file_hashes("r1", []) == {}
    texts = await chunk_store.file_texts("r1", ["src/auth/login.py", "nope.py"])
    assert texts == {"src/auth/login.py": "def login(user, password):\n    check"}
    chunks = await chunk_store.chunks("r1")  # ordered by code point ('X' < '_')
    assert [(c.file_path, c.start_line) for c in chunks] == [
        ("docs/100%/guide.md", 1),
        ("docs/100%/guide.md", 2),
        ("src/aXb/other.py", 1),
        ("src/a_b/util.py", 1),
        ("src/auth/login.py", 1),
        ("src/auth/login.py", 2),
    ]


async def test_replace_leaves_no_trace_of_old_chunks(chunk_store: ChunkStore) -> None:
    await _seed(chunk_store)
    await chunk_store.replace_files(
        "r1",
        [file_batch("r1", "src/auth/login.py", ["def logout(): pass"], vectors=[[0.0, 1.0, 0.0]])],
    )
    chunks = [c for c in await chunk_store.chunks("r1") if c.file_path == "src/auth/login.py"]
    assert [c.content for c in chunks] == ["def logout(): pass"]
    hits, total = await chunk_store.lexical_search(["password"], NO_FILTER, 10)
    assert hits == [] and total == 0
    vec_hits, vec_total = await chunk_store.vector_search([1.0, 0.0, 0.0], NO_FILTER, 50)
    assert vec_total == 6
    assert all(h.chunk.content != "def login(user, password):" for h in vec_hits)


async def test_delete_files_and_repository(chunk_store: ChunkStore) -> None:
    await _seed(chunk_store)
    assert await chunk_store.delete_files("r1", ["src/auth/login.py", "absent.py"]) == 1
    assert "src/auth/login.py" not in await chunk_store.file_hashes("r1")
    hits, _ = await chunk_store.lexical_search(["password"], NO_FILTER, 10)
    assert hits == []
    await chunk_store.delete_repository("r1")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.get_repository("r1")
    hits, total = await chunk_store.lexical_search(["login"], NO_FILTER, 10)
    assert [h.chunk.repository_id for h in hits] == ["r2"] and total == 1


async def test_vector_search_ranks_by_cosine(chunk_store: ChunkStore) -> None:
    await _seed(chunk_store)
    hits, total = await chunk_store.vector_search([2.0, 0.0, 0.0], NO_FILTER, 3)
    assert total == 7
    assert [h.chunk.file_path for h in hits] == [
        "src/auth/login.py",
        "main.go",
        "docs/100%/guide.md",
    ]
    assert [round(h.score, 3) for h in hits] == [1.0, 0.9, 0.8]


async def test_vector_search_ties_break_by_path_then_line(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo())
    same = [[1.0, 0.0], [1.0, 0.0]]
    await chunk_store.replace_files(
        "r1",
        [
            file_batch("r1", "b.py", ["x = 1", "y = 2"], vectors=same),
            file_batch("r1", "a.py", ["z = 3"], vectors=[[1.0, 0.0]]),
        ],
    )
    hits, _ = await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 3)
    assert [(h.chunk.file_path, h.chunk.start_line) for h in hits] == [
        ("a.py", 1),
        ("b.py", 1),
        ("b.py", 2),
    ]


async def test_vector_search_ties_at_the_cut_keep_the_smallest_paths(
    chunk_store: ChunkStore,
) -> None:
    await chunk_store.save_repository(repo())
    files = [file_batch("r1", f"{name}.py", ["x = 1"], vectors=[[1.0, 0.0]]) for name in "edcba"]
    files.append(file_batch("r1", "z.py", ["y = 2"], vectors=[[1.0, 1.0]]))
    await chunk_store.replace_files("r1", files)
    hits, total = await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 3)
    assert [h.chunk.file_path for h in hits] == ["a.py", "b.py", "c.py"] and total == 6


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (SearchFilters(repository_id="r2"), ["main.go"]),
        (SearchFilters(file_type="md"), ["docs/100%/guide.md", "docs/100%/guide.md"]),
        (SearchFilters(language="go"), ["main.go"]),
        (SearchFilters(directory="src/auth"), ["src/auth/login.py", "src/auth/login.py"]),
        # '_' and '%' are literal characters, not LIKE wildcards.
        (SearchFilters(directory="src/a_b"), ["src/a_b/util.py"]),
        (SearchFilters(directory="docs/100%"), ["docs/100%/guide.md", "docs/100%/guide.md"]),
        (SearchFilters(directory="docs/1"), []),
        (
            SearchFilters(directory="src", file_type="py", repository_id="r1"),
            ["src/a_b/util.py", "src/aXb/other.py", "src/auth/login.py", "src/auth/login.py"],
        ),
    ],
)
async def test_vector_search_filters(
    chunk_store: ChunkStore, filters: SearchFilters, expected: list[str]
) -> None:
    await _seed(chunk_store)
    hits, total = await chunk_store.vector_search([1.0, 1.0, 1.0], filters, 50)
    assert sorted(h.chunk.file_path for h in hits) == sorted(expected)
    assert total == len(expected)


async def test_directory_filter_takes_the_directory_not_its_neighbours(
    chunk_store: ChunkStore,
) -> None:
    await chunk_store.save_repository(repo())
    paths = [
        "lib/net/a.py",
        "lib/net/sub/e.py",
        "lib/net.py",
        "lib/net-old/b.py",
        "lib/net.d/c.py",
        "lib/network/d.py",
        "lib/ne/f.py",
    ]
    await chunk_store.replace_files(
        "r1",
        [
            file_batch("r1", p, [f"socket{i} = open_socket()"], vectors=[[1.0, i / 100]])
            for i, p in enumerate(paths)
        ],
    )
    inside = ["lib/net/a.py", "lib/net/sub/e.py"]
    for directory in ("lib/net", "lib/net/", "./lib/net"):
        flt = SearchFilters(directory=directory)
        dense, dense_total = await chunk_store.vector_search([1.0, 0.0], flt, 10)
        sparse, sparse_total = await chunk_store.lexical_search(
            lexical.query_terms("socket"), flt, 10
        )
        assert sorted(h.chunk.file_path for h in dense) == inside and dense_total == 2
        assert sorted(h.chunk.file_path for h in sparse) == inside and sparse_total == 2


async def test_repository_filter_in_a_one_repository_project(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo())
    await chunk_store.replace_files(
        "r1",
        [file_batch("r1", f"m{i}.py", [f"socket{i} = 1"], vectors=[[1.0, i]]) for i in range(3)],
    )
    terms = lexical.query_terms("socket")
    for rid, expected in (("r1", 3), ("unknown", 0)):
        flt = SearchFilters(repository_id=rid)
        dense, dense_total = await chunk_store.vector_search([1.0, 0.0], flt, 10)
        sparse, sparse_total = await chunk_store.lexical_search(terms, flt, 10)
        assert (len(dense), dense_total, len(sparse), sparse_total) == (expected,) * 4


async def test_filtered_vector_search_fills_the_limit(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo())
    # 200 chunks close to the query in a.py, 30 far from it in rare.md: a filter on the rare
    # file type must still return 20 hits, not only those among the nearest candidates.
    await chunk_store.replace_files(
        "r1",
        [
            file_batch(
                "r1",
                "a.py",
                [f"v{i} = {i}" for i in range(200)],
                vectors=[[1.0, i / 1000] for i in range(200)],
            ),
            file_batch(
                "r1",
                "rare.md",
                [f"note {i}" for i in range(30)],
                vectors=[[-1.0, i / 1000] for i in range(30)],
            ),
        ],
    )
    hits, total = await chunk_store.vector_search([1.0, 0.0], SearchFilters(file_type="md"), 20)
    assert len(hits) == 20 and total == 30


def _reference_bm25(docs: dict[str, Counter[str]], terms: list[str]) -> dict[str, float]:
    """BM25 computed from scratch, independently of any adapter."""
    n = len(docs)
    avg = sum(sum(d.values()) for d in docs.values()) / n
    out: dict[str, float] = {}
    bound = 0.0
    for t in terms:
        df = sum(1 for d in docs.values() if t in d)
        if df == 0:
            continue
        w = math.log(1 + (n - df + 0.5) / (df + 0.5))
        bound += w * 2.2
        for key, d in docs.items():
            tf = d.get(t, 0)
            if tf:
                length = sum(d.values())
                out[key] = out.get(key, 0.0) + w * tf * 2.2 / (
                    tf + 1.2 * (0.25 + 0.75 * length / avg)
                )
    return {k: v / bound for k, v in out.items()}


CORPUS = {
    "pkg/config.py": [
        "def load_config(path):\n    with open(path) as f:\n        return parse_config(f.read())",
        "def parse_config(text):\n    return json.loads(text)",
        "class ConfigError(Exception):\n    pass",
    ],
    "pkg/http/server.py": [
        "class HTTPServer:\n    def serve_forever(self):\n        while True:\n            self.handle()",
        "def parse_request(raw):\n    method, path = raw.split(' ', 1)\n    return method, path",
    ],
    "pkg/util.py": [
        "def retry(fn, attempts=3):\n    for _ in range(attempts):\n        try:\n            return fn()",
        "def parse_json(text):\n    return json.loads(text)",
    ],
    "README.md": ["# Config\nThe config file is parsed by load_config.", "Server usage"],
}


@pytest.mark.parametrize("query", ["parse config", "json loads", "HTTPServer serve", "retry"])
async def test_lexical_search_is_exact_bm25(chunk_store: ChunkStore, query: str) -> None:
    await chunk_store.save_repository(repo())
    await chunk_store.replace_files(
        "r1", [file_batch("r1", path, pieces) for path, pieces in CORPUS.items()]
    )
    terms = lexical.query_terms(query)
    docs = {
        (path, piece): lexical.document_terms(piece, path, symbol_of(piece))
        for path, pieces in CORPUS.items()
        for piece in pieces
    }
    expected = _reference_bm25(docs, terms)
    hits, total = await chunk_store.lexical_search(terms, NO_FILTER, 10)
    assert total == len(expected)
    want = sorted(expected.items(), key=lambda kv: -kv[1])[:10]
    assert [round(h.score, 9) for h in hits] == [round(v, 9) for _, v in want]
    got = {(h.chunk.file_path, h.chunk.content): h.score for h in hits}
    for key, score in got.items():
        assert score == pytest.approx(expected[key], abs=1e-9)
    assert all(0.0 <= h.score <= 1.0 for h in hits)


async def test_lexical_search_filters_do_not_change_scores(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo())
    await chunk_store.replace_files(
        "r1", [file_batch("r1", path, pieces) for path, pieces in CORPUS.items()]
    )
    terms = lexical.query_terms("parse json")
    unfiltered, _ = await chunk_store.lexical_search(terms, NO_FILTER, 10)
    filtered, total = await chunk_store.lexical_search(
        terms, SearchFilters(directory="pkg/http"), 10
    )
    assert total == 1
    assert filtered[0].score == pytest.approx(
        next(h.score for h in unfiltered if h.chunk.file_path == "pkg/http/server.py")
    )


async def test_a_file_of_two_languages_is_filtered_chunk_by_chunk(chunk_store: ChunkStore) -> None:
    """A chunker may tell a file's languages apart (a notebook, code in markdown): the
    language filter then takes the chunks of that language, in every search, and replacing the
    file leaves nothing of them behind."""
    await chunk_store.save_repository(repo())
    doc = file_batch(
        "r1",
        "docs/guide.md",
        ["# Parse the config", "def parse_config(path):\n    return path", "parse it twice"],
        vectors=[[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.6, 0.8, 0.0]],
    )
    chunks = list(doc.chunks)
    chunks[1] = chunks[1].model_copy(update={"language": "python"})
    await chunk_store.replace_files("r1", [dataclasses.replace(doc, chunks=chunks)])
    terms = lexical.query_terms("parse config")
    for language, lines in (("python", [2]), ("markdown", [1, 4])):
        flt = SearchFilters(language=language)
        hits, total = await chunk_store.lexical_search(terms, flt, 10)
        assert total == len(lines) and sorted(h.chunk.start_line for h in hits) == lines
        near, total = await chunk_store.vector_search([1.0, 0.0, 0.0], flt, 10)
        assert total == len(lines) and sorted(h.chunk.start_line for h in near) == lines
    await chunk_store.replace_files("r1", [file_batch("r1", "docs/guide.md", ["parse once"])])
    for language, expected in (("python", 0), ("markdown", 1)):
        hits, total = await chunk_store.lexical_search(terms, SearchFilters(language=language), 10)
        assert total == len(hits) == expected
    assert [h.chunk.content for h in hits] == ["parse once"]
    # Unfiltered, no old posting counts (as a match, or in a term's document frequency):
    # the same hit and score as a store holding only the new file.
    hits, total = await chunk_store.lexical_search(terms, NO_FILTER, 10)
    assert total == 1 and [h.chunk.content for h in hits] == ["parse once"]
    docs = {("docs/guide.md", "parse once"): lexical.document_terms("parse once", "docs/guide.md")}
    assert hits[0].score == pytest.approx(_reference_bm25(docs, terms)[next(iter(docs))])


async def test_lexical_ties_break_by_path_then_line(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo())
    await chunk_store.replace_files(
        "r1",
        [file_batch("r1", "b.txt", ["token", "token"]), file_batch("r1", "a.txt", ["token"])],
    )
    hits, _ = await chunk_store.lexical_search(["token"], NO_FILTER, 10)
    assert [(h.chunk.file_path, h.chunk.start_line) for h in hits] == [
        ("a.txt", 1),
        ("b.txt", 1),
        ("b.txt", 2),
    ]


async def test_lexical_ties_at_the_cut_keep_the_smallest_paths(chunk_store: ChunkStore) -> None:
    # 80 chunks with one score (more than a top-N with room for a few ties holds), written in
    # reverse path order, and one better chunk: the cut keeps the best, then the smallest paths.
    await chunk_store.save_repository(repo())
    files = [file_batch("r1", f"f{i:02d}.txt", ["token"]) for i in reversed(range(80))]
    files.append(file_batch("r1", "zz.txt", ["token token"]))
    await chunk_store.replace_files("r1", files)
    hits, total = await chunk_store.lexical_search(["token"], NO_FILTER, 5)
    assert [h.chunk.file_path for h in hits] == [
        "zz.txt",
        "f00.txt",
        "f01.txt",
        "f02.txt",
        "f03.txt",
    ]
    assert total == 81 and hits[1].score == hits[4].score > 0


async def test_lexical_ties_after_better_hits_keep_the_smallest_paths(
    chunk_store: ChunkStore,
) -> None:
    # Three better chunks, then 80 tied ones crossing the limit: the tied places go to the
    # smallest paths whatever order a store reads its candidates in.
    await chunk_store.save_repository(repo())
    files = [file_batch("r1", f"f{i:02d}.txt", ["token"]) for i in reversed(range(80))]
    files += [file_batch("r1", f"z{i}.txt", ["token token"]) for i in range(3)]
    await chunk_store.replace_files("r1", files)
    hits, total = await chunk_store.lexical_search(["token"], NO_FILTER, 5)
    assert [h.chunk.file_path for h in hits] == ["z0.txt", "z1.txt", "z2.txt", "f00.txt", "f01.txt"]
    assert total == 83


async def test_lexical_search_counts_without_hits_and_takes_a_term_once(
    chunk_store: ChunkStore,
) -> None:
    await chunk_store.save_repository(repo())
    await chunk_store.replace_files(
        "r1", [file_batch("r1", f"f{i}.txt", ["token here", "other"]) for i in range(4)]
    )
    assert await chunk_store.lexical_search(["token"], NO_FILTER, 0) == ([], 4)
    once = await chunk_store.lexical_search(["token", "other"], NO_FILTER, 10)
    assert await chunk_store.lexical_search(["token", "other", "token"], NO_FILTER, 10) == once


async def test_embedding_cache_is_keyed_by_model(chunk_store: ChunkStore) -> None:
    await chunk_store.cache_embeddings("m1", {"h1": [0.5, 0.25], "h2": [1.0, 0.0]})
    assert await chunk_store.cached_embeddings("m1", ["h1", "h3"]) == {"h1": [0.5, 0.25]}
    assert await chunk_store.cached_embeddings("m2", ["h1"]) == {}


async def test_empty_store_searches(chunk_store: ChunkStore) -> None:
    assert await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 5) == ([], 0)
    assert await chunk_store.lexical_search(["x"], NO_FILTER, 5) == ([], 0)
    assert await chunk_store.list_repositories() == []


async def test_stored_vectors_serve_the_embedding_cache_after_replacement(
    chunk_store: ChunkStore,
) -> None:
    r = repo().model_copy(update={"embedding_model": "m1", "embedding_dimension": 2})
    await chunk_store.save_repository(r)
    first = file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])
    await chunk_store.replace_files("r1", [first])
    h = first.chunks[0].content_hash
    assert await chunk_store.cached_embeddings("m1", [h]) == {h: pytest.approx([0.6, 0.8])}
    assert await chunk_store.cached_embeddings("m2", [h]) == {}
    # The file changes: the old chunk's vector stays cached (an edit undone costs nothing).
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def b():\n    return 2"], [[1.0, 0.0]])]
    )
    assert await chunk_store.cached_embeddings("m1", [h]) == {h: pytest.approx([0.6, 0.8])}


async def test_one_embedding_model_per_store(chunk_store: ChunkStore) -> None:
    with_model = repo().model_copy(update={"embedding_model": "m1", "embedding_dimension": 2})
    await chunk_store.save_repository(with_model)
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])]
    )
    other = repo("r2", "/repos/r2", "r2").model_copy(
        update={"embedding_model": "m2", "embedding_dimension": 2}
    )
    with pytest.raises(ModelMismatch) as err:
        await chunk_store.save_repository(other)
    assert "force_reindex" in str(err.value)
    # The only holder may switch: its old vectors are dropped, not mixed.
    await chunk_store.save_repository(with_model.model_copy(update={"embedding_model": "m2"}))
    hits, total = await chunk_store.vector_search([0.6, 0.8], NO_FILTER, 5)
    assert hits == [] and total == 0


async def test_a_repository_without_vectors_may_gain_the_project_model(
    chunk_store: ChunkStore,
) -> None:
    m1 = {"embedding_model": "m1", "embedding_dimension": 2}
    await chunk_store.save_repository(repo().model_copy(update=m1))
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])]
    )
    # Indexed without an embedder beside it: allowed, and then it may take the same model
    # (an incremental run adds its vectors), but not another one.
    lexical_only = repo("r2", "/repos/r2", "r2")
    await chunk_store.save_repository(lexical_only)
    await chunk_store.replace_files("r2", [file_batch("r2", "b.py", ["def b():\n    return 2"])])
    with pytest.raises(ModelMismatch, match="force_reindex"):
        await chunk_store.save_repository(
            lexical_only.model_copy(update={"embedding_model": "m2", "embedding_dimension": 2})
        )
    await chunk_store.save_repository(lexical_only.model_copy(update=m1))
    await chunk_store.replace_files(
        "r2", [file_batch("r2", "b.py", ["def b():\n    return 2"], [[0.8, 0.6]])]
    )
    hits, total = await chunk_store.vector_search([0.8, 0.6], NO_FILTER, 5)
    assert total == 2 and hits[0].chunk.repository_id == "r2"
    assert {r.embedding_model for r in await chunk_store.list_repositories()} == {"m1"}


async def test_indexing_lock_without_wait_refuses_a_held_repository(
    chunk_store: ChunkStore,
) -> None:
    async with chunk_store.indexing_lock("r1", wait=False):
        with pytest.raises(RepositoryBusy):
            async with chunk_store.indexing_lock("r1", wait=False):
                pass
    async with chunk_store.indexing_lock("r1", wait=False):  # released
        pass


async def test_definitions_look_up_the_names_symbols_hold(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo("r1", "/repos/r1", "one"))
    await chunk_store.save_repository(repo("r2", "/repos/r2", "two"))

    def named(repo_id: str, path: str, symbols: list[str | None]) -> FileBatch:
        batch = file_batch(repo_id, path, [f"piece {i} of {path}" for i in range(len(symbols))])
        chunks = [
            c.model_copy(update={"symbol": s}) for c, s in zip(batch.chunks, symbols, strict=True)
        ]
        return dataclasses.replace(batch, chunks=chunks)

    await chunk_store.replace_files(
        "r1",
        [
            named("r1", "src/reader.py", ["pkg.JsonReader", "JsonReader.peek", None]),
            named("r1", "lib/base.rb", ["Sinatra::Base, helper_fn", "Foo#empty?", "run()"]),
        ],
    )
    await chunk_store.replace_files(
        "r2",
        [named("r2", "a/JsonReader.java", ["JsonReader", "jsonreader"])],
    )

    async def found(
        names: list[str], filters: SearchFilters = NO_FILTER, limit: int = 10
    ) -> list[str]:
        return [
            f"{c.repository_id}:{c.file_path}:{c.start_line}"
            for c in await chunk_store.definitions(names, filters, limit)
        ]

    assert await found(["JsonReader"]) == ["r2:a/JsonReader.java:1", "r1:src/reader.py:1"]
    assert await found(["jsonreader"]) == ["r2:a/JsonReader.java:2"]  # exact case
    assert await found(["peek"]) == ["r1:src/reader.py:2"]
    assert await found(["Base"]) == await found(["helper_fn"]) == ["r1:lib/base.rb:1"]
    assert await found(["empty"]) == ["r1:lib/base.rb:2"]
    assert await found(["run"]) == ["r1:lib/base.rb:3"]
    assert await found(["Sinatra", "pkg", "Reader", ""]) == []
    assert await found(["JsonReader", "peek"], limit=2) == [
        "r2:a/JsonReader.java:1",
        "r1:src/reader.py:1",
    ]
    assert await found(["JsonReader"], SearchFilters(repository_id="r1")) == ["r1:src/reader.py:1"]
    assert await found(["JsonReader"], SearchFilters(file_type="java")) == [
        "r2:a/JsonReader.java:1"
    ]
    assert await found(["JsonReader", "Base"], SearchFilters(directory="src")) == [
        "r1:src/reader.py:1"
    ]
    assert await found([]) == []
    # Replaced and deleted files leave no names behind.
    await chunk_store.replace_files("r1", [named("r1", "src/reader.py", ["Other"])])
    await chunk_store.delete_files("r2", ["a/JsonReader.java"])
    assert await found(["JsonReader", "peek", "jsonreader"]) == []
    assert await found(["Other", "empty"]) == ["r1:lib/base.rb:2", "r1:src/reader.py:1"]
