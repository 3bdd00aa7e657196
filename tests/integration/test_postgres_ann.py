"""Postgres ANN segments: built in the background and at the end of a load, merged, searched
completely with filters (and their matches remembered), vacuumed after a large load."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.adapters.postgres import AnnConfig, PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store.match_cache import KeptMatches
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.adapters.postgres.chunk_store.vector_search import VectorSearch
from codebase_mcp_search.core.errors import ModelMismatch
from codebase_mcp_search.core.models import IndexRequest, SearchFilters
from codebase_mcp_search.core.ports import ChunkStore
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import NO_FILTER, indexing_service

SMALL_ANN = AnnConfig(min_rows=100, segment_rows=150, tail_rows=40, exact_rows=30, max_segments=2)


def vector_search(store: PgChunkStore) -> VectorSearch:
    """The store's plain vector search, under the copy of its vectors."""
    vectors = store._vectors
    assert isinstance(vectors, VectorCopy)
    return vectors.inner


def _corpus(n_files: int) -> dict[str, list[str]]:
    return {
        f"pkg{i % 7}/mod{i}.py": [
            f"def f{i}_{j}(x):\n    return x * {i} + {j}  # item {i} {j}" for j in range(5)
        ]
        for i in range(n_files)
    }


async def _load(store: ChunkStore, n_files: int, dim: int = 32) -> HashingEmbedder:
    emb = HashingEmbedder(dim)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": emb.model, "embedding_dimension": dim})
    )
    batches = []
    for path, pieces in _corpus(n_files).items():
        vecs = (await emb.embed_documents(pieces)).vectors
        batches.append(file_batch("r1", path, pieces, vecs))
    for i in range(0, len(batches), 20):
        await store.replace_files("r1", batches[i : i + 20])
    return emb


async def test_segments_are_built_merged_and_searched_completely(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project, ann=SMALL_ANN)
    reference = InMemoryChunkStore()
    emb = await _load(store, 120)  # 600 chunks
    await _load(reference, 120)
    await store.optimize()
    ws = await store.workspace()
    async with db.connection() as conn:
        segments = await conn.fetch(f"SELECT lo, hi FROM {ws.quoted}.ann_segments ORDER BY lo")
        indexes = await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'chunks' "
            "AND indexname LIKE 'ann%'",
            ws.schema,
        )
    assert 1 <= len(segments) <= SMALL_ANN.max_segments
    assert len(indexes) == len(segments)
    query = await emb.embed_query("return x item 7")
    # Unfiltered: HNSW over the segments, same best hit as the exact reference.
    hits, total = await store.vector_search(query, NO_FILTER, 10)
    ref, ref_total = await reference.vector_search(query, NO_FILTER, 10)
    assert total == ref_total == 600 and len(hits) == 10
    assert hits[0].chunk.id == ref[0].chunk.id
    # Selective filter (one directory, a file type): still `limit` hits, exactly ranked.
    for flt in (SearchFilters(directory="pkg3"), SearchFilters(directory="pkg3", file_type="py")):
        hits, total = await store.vector_search(query, flt, 50)
        ref, ref_total = await reference.vector_search(query, flt, 50)
        assert total == ref_total and len(hits) == min(50, ref_total)
        # Exact: the same scores in the same order (float32 vs pgvector rounding aside).
        assert [h.score for h in hits] == pytest.approx([h.score for h in ref], abs=1e-5)
        assert all(h.chunk.file_path.startswith("pkg3/") for h in hits)
    # The same with HNSW walking every segment that has matches (no per-segment exact scans):
    # the candidate list widened by each segment's share of matches still fills the limit.
    walk = PgChunkStore(
        db, project, ann=dataclasses.replace(SMALL_ANN, exact_segment_rows=0, ef_search_max=1000)
    )
    for flt in (SearchFilters(directory="pkg3"), SearchFilters(file_type="py")):
        hits, total = await walk.vector_search(query, flt, 50)
        ref, ref_total = await reference.vector_search(query, flt, 50)
        assert total == ref_total and len(hits) == min(50, ref_total)
        assert hits[0].chunk.id == ref[0].chunk.id


async def test_a_tail_filled_during_a_build_gets_the_next_build(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes that pass the segment threshold while a background build runs start the next
    build once the tail is full again, counted from the tail that build saw; the trigger is
    not lost (which left a tail of two segments to one long build after the load)."""
    ann = AnnConfig(min_rows=0, segment_rows=100, tail_rows=40, max_segments=8)
    store = PgChunkStore(db, project, ann=ann)
    emb = HashingEmbedder(32)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": emb.model, "embedding_dimension": 32})
    )
    files = [
        file_batch("r1", path, pieces, (await emb.embed_documents(pieces)).vectors)
        for path, pieces in _corpus(60).items()  # 5 chunks a file
    ]
    counting, building = asyncio.Event(), asyncio.Event()
    at_build = asyncio.Event()
    drop_stale, create_segment = store._segments._drop_stale, store._segments._create_segment

    async def gated_drop(*args: Any) -> None:
        await counting.wait()
        await drop_stale(*args)

    async def gated_create(*args: Any) -> None:
        at_build.set()
        await building.wait()
        await create_segment(*args)

    monkeypatch.setattr(store._segments, "_drop_stale", gated_drop)
    monkeypatch.setattr(store._segments, "_create_segment", gated_create)

    async def settled() -> list[tuple[int, int]]:
        while store._segments._builds:
            await asyncio.gather(*list(store._segments._builds))
        ws = await store.workspace()
        async with db.connection() as conn:
            rows = await conn.fetch(f"SELECT lo, hi FROM {ws.quoted}.ann_segments ORDER BY lo")
        return [(r["lo"], r["hi"]) for r in rows]

    await store.replace_files("r1", files[0:20])  # 100 rows: a build starts, held before counting
    await store.replace_files("r1", files[20:32])  # 60 more
    counting.set()
    await at_build.wait()  # it counted a tail of 160
    await store.replace_files("r1", files[32:42])  # 50 more while it builds: 110 since it began
    building.set()
    assert await settled() == [(0, 160)]
    await store.replace_files("r1", files[42:54])  # 60 more: a tail of 110
    assert await settled() == [(0, 160), (160, 270)]


async def test_filtered_matches_are_remembered_until_the_chunks_change(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project, ann=SMALL_ANN)
    emb = await _load(store, 120)
    await store.optimize()
    flt = SearchFilters(directory="pkg3")
    query = await emb.embed_query("return x item 10")
    first, total = await store.vector_search(query, flt, 10)
    again, total_again = await store.vector_search(query, flt, 10)
    assert [h.chunk.id for h in again] == [h.chunk.id for h in first]
    assert total_again == total == 85
    kept = vector_search(store).matches
    assert isinstance(kept, KeptMatches)
    assert len(kept) == 1  # the second search reused the first one's pass
    # Replace one file of the directory with as many chunks: new rows past the last segment,
    # and the same counts. A cache keyed on the counts alone would skip them.
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    pieces = [f"def {w}_{w}(x):\n    return {w}_table[x]  # {w} lookup" for w in words]
    vectors = (await emb.embed_documents(pieces)).vectors
    await store.replace_files("r1", [file_batch("r1", "pkg3/mod10.py", pieces, vectors)])
    target = await emb.embed_query(pieces[2])
    hits, total = await store.vector_search(target, flt, 10)
    assert total == 85
    assert hits[0].chunk.content == pieces[2]
    assert not any(h.chunk.content.startswith("def f10_") for h in hits)  # the old rows


@pytest.mark.parametrize(("pool_size", "busy"), [(2, 0), (8, 0), (3, 1)])
async def test_a_large_load_ends_vacuumed_and_analysed_with_any_pool(
    pg_url: str, project: str, tmp_path: Path, pool_size: int, busy: int
) -> None:
    """Chunks and postings are vacuumed side by side when the pool has a connection to spare;
    with a pool of two (one held by the indexing lock, one by the build) or every other
    connection busy (here, held by someone else all along) they take turns, without waiting
    for the pool's timeout."""
    db = PgDatabase(pg_url, data_dir=tmp_path, pool_size=pool_size, connect_timeout_s=30)
    try:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(busy):
                await held.enter_async_context(db.connection())
            store = PgChunkStore(db, project, ann=SMALL_ANN)
            files = {path: "\n\n\n".join(pieces) for path, pieces in _corpus(30).items()}
            result = await asyncio.wait_for(
                indexing_service(store, files).index(IndexRequest(root="/repo")), 20
            )
        assert result.chunks_created >= SMALL_ANN.tail_rows
        ws = await store.workspace()
        async with db.connection() as conn:
            rows = await conn.fetch(
                "SELECT relname, last_vacuum, last_analyze FROM pg_stat_user_tables "
                "WHERE schemaname = $1 AND relname IN ('chunks', 'postings')",
                ws.schema,
            )
    finally:
        await db.close()
    assert sorted(r["relname"] for r in rows) == ["chunks", "postings"]
    assert all(r["last_vacuum"] is not None and r["last_analyze"] is not None for r in rows)


async def test_the_one_statement_exact_search_agrees_with_the_planned_one(
    db: PgDatabase, project: str
) -> None:
    """An unfiltered search of a project searched exactly runs as one statement; it returns
    what the planned search (a transaction: stats, then the scan) returns, and steps aside
    for ANN segments over many vectors and for a query of another dimension."""
    store = PgChunkStore(db, project, ann=SMALL_ANN)
    emb = await _load(store, 20)  # 100 chunks, no segments yet
    ws = await store.workspace()
    answered: list[object] = []
    plain = vector_search(store)
    one_statement = plain._exact_unfiltered

    async def spy(*args: Any) -> Any:
        answered.append(await one_statement(*args))
        return answered[-1]

    plain._exact_unfiltered = spy  # type: ignore[method-assign]
    for text in ("return x", "item 3 4", "def f7_2"):
        vector = await emb.embed_query(text)
        one, n1 = await store.vector_search(vector, NO_FILTER, 10)
        # A filter of the only repository is dropped (narrowed) after the planned path began.
        planned, n2 = await store.vector_search(vector, SearchFilters(repository_id="r1"), 10)
        assert n1 == n2 == 100
        assert [(h.chunk.id, h.score) for h in one] == [(h.chunk.id, h.score) for h in planned]
    assert len(answered) == 3 and None not in answered
    with pytest.raises(ModelMismatch):
        await store.vector_search([1.0] * 31 + [0.5, 0.5], NO_FILTER, 5)
    assert answered[-1] is None
    answered.clear()
    await _load(store, 120)
    await store.optimize()
    async with db.connection() as conn:
        assert await conn.fetchval(f"SELECT count(*) FROM {ws.quoted}.ann_segments") > 0
    hits, total = await store.vector_search(await emb.embed_query("return x * 5"), NO_FILTER, 10)
    assert total == 600 and len(hits) == 10
    assert answered == [None]  # 600 vectors in segments: the planned ANN search
    # Seen segmented, the project is searched the planned way at once, with no attempt first.
    await store.vector_search(await emb.embed_query("item 7 2"), NO_FILTER, 10)
    assert answered == [None]
