"""ChunkRetrieval contract, vectors, definitions and context: every store adapter passes it.
Lexical retrieval: ``test_chunk_retrieval_lexical``."""

from __future__ import annotations

import dataclasses

import pytest

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import CONTEXT_LINES, SearchFilters, StemGroup, split_lines
from codebase_mcp_search.core.ports import (
    ChunkStore,
)
from tests.contract.store_data import NO_FILTER, seed
from tests.factories import FileBatch, file_batch, repo


async def test_empty_store_searches(chunk_store: ChunkStore) -> None:
    assert await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 5) == ([], 0)
    assert await chunk_store.lexical_search(["x"], NO_FILTER, 5) == ([], 0)
    assert await chunk_store.list_repositories() == []


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


async def test_vector_search_ranks_by_cosine(chunk_store: ChunkStore) -> None:
    await seed(chunk_store)
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
    await seed(chunk_store)
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


async def test_a_directory_that_is_a_file_path_takes_that_file_alone(
    chunk_store: ChunkStore,
) -> None:
    # A search within one file (the files a question names by path, ``path_files``).
    await chunk_store.save_repository(repo())
    paths = ["lib/net.py", "lib/net.pyi", "lib/net.py.orig", "lib/network.py", "net.py"]
    await chunk_store.replace_files(
        "r1", [file_batch("r1", p, ["socket = open_socket()", "handles = []"]) for p in paths]
    )
    terms = lexical.query_terms("socket")
    for stems in ((), (StemGroup(("socket", "socketing"), 1.25),)):
        hits, total = await chunk_store.lexical_search(
            terms, SearchFilters(directory="lib/net.py"), 5, stems
        )
        assert [h.chunk.file_path for h in hits] == ["lib/net.py"] and total == 1


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
