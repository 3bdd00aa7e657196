"""ChunkRetrieval contract, lexical retrieval (BM25 against a reference computed from
scratch): every store adapter passes it."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import SearchFilters
from codebase_mcp_search.core.ports import (
    ChunkStore,
)
from tests.contract.conftest import CHUNK_STORES, pg_store_packed
from tests.contract.store_data import NO_FILTER
from tests.factories import file_batch, repo, symbol_of

# Every chunk store, and Postgres reading its terms packed and corrected by later writes.
LEXICAL_STORES = {**CHUNK_STORES, "postgres-packed": pg_store_packed}


@pytest.fixture(params=sorted(LEXICAL_STORES))
async def chunk_store(request: pytest.FixtureRequest) -> AsyncIterator[ChunkStore]:
    async with LEXICAL_STORES[request.param](request) as store:
        assert isinstance(store, ChunkStore)
        yield store


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
