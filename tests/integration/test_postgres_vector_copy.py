"""The copy of a small project's vectors in the process: read once a generation was searched
twice, answers unfiltered searches as the database's exact scan does, and is dropped (the
scan answers) as soon as a write moves the project on."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres import PgCaches, PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import Copy, VectorCopy
from codebase_mcp_search.core.models import ScoredChunk
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import NO_FILTER

DIM = 24


async def _load(store: PgChunkStore, n_files: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": "random", "embedding_dimension": DIM})
    )
    batches = []
    for i in range(n_files):
        pieces = [f"def f{i}_{j}(x):\n    return x + {i * 10 + j}" for j in range(4)]
        vectors = rng.normal(size=(len(pieces), DIM)).tolist()
        batches.append(file_batch("r1", f"pkg/mod{i}.py", pieces, vectors))
    await store.replace_files("r1", batches)


def _copy_of(store: PgChunkStore) -> VectorCopy:
    copy = store._vectors
    assert isinstance(copy, VectorCopy)
    return copy


def chunks_of(store: PgChunkStore) -> ChunkCache:
    chunks = store._chunks
    assert isinstance(chunks, ChunkCache)
    return chunks


async def _copied(store: PgChunkStore) -> Copy:
    for _ in range(200):
        held = _copy_of(store).held
        if held is not None:
            return held
        await asyncio.sleep(0.05)
    raise AssertionError("no copy was read")


def _scan_refused(store: PgChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the database's unfiltered scan fail, so a search that succeeds used the copy."""

    async def refused(*_: Any) -> None:
        raise AssertionError("the database's scan answered")

    monkeypatch.setattr(_copy_of(store).inner, "_exact_unfiltered", refused)


def _ranked(hits: list[ScoredChunk]) -> list[str]:
    return [h.chunk.id for h in hits]


async def test_copy_answers_as_the_scan_does(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project)
    await _load(store, 50)  # 200 chunks
    rng = np.random.default_rng(1)
    queries = [rng.normal(size=DIM).tolist() for _ in range(8)]
    scan = PgChunkStore(db, project, caches=PgCaches(vector_floats=0))  # the database's alone
    scanned = [await scan.vector_search(q, NO_FILTER, 20) for q in queries]
    copy = _copy_of(store)
    _, total = await store.vector_search(queries[0], NO_FILTER, 20)
    await asyncio.sleep(0.2)
    assert total == 200 and copy.held is None  # one search reads no copy
    await store.vector_search(queries[1], NO_FILTER, 20)
    held = await _copied(store)
    assert held.dimension == DIM and len(held.seqs) == 200
    _scan_refused(store, monkeypatch)
    for q, (want, want_total) in zip(queries, scanned, strict=True):
        got, got_total = await store.vector_search(q, NO_FILTER, 20)
        assert got_total == want_total == 200
        assert _ranked(got) == _ranked(want)
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)
        assert [h.chunk for h in got] == [h.chunk for h in want]
    # The chunks chosen again are taken from the store's chunk cache: no row is read.
    read: list[Any] = []
    decoded = ChunkCache.decoded

    def recorded(cache: ChunkCache, rows: Any, epoch: int) -> Any:
        rows = list(rows)
        read.extend(r for r in rows if r["seq"] is not None)  # chunk rows, not the state row
        return decoded(cache, rows, epoch)

    monkeypatch.setattr(ChunkCache, "decoded", recorded)
    again, _ = await store.vector_search(queries[-1], NO_FILTER, 20)
    assert _ranked(again) == _ranked(scanned[-1][0]) and read == []
    # Their context lines, once read, are kept with them: the same as read for equal chunks.
    first_read = await store.hit_contexts([h.chunk for h in again])
    assert all(chunks_of(store).context(h.chunk) is not None for h in again)
    kept = await store.hit_contexts([h.chunk for h in again])
    read_again = await store.hit_contexts([h.chunk.model_copy() for h in again])
    assert kept == first_read == read_again and len(kept) == 20
    # More than the project holds, and none.
    everything, n = await store.vector_search(queries[0], NO_FILTER, 500)
    assert n == 200 and len(everything) == 200
    assert (await store.vector_search(queries[0], NO_FILTER, 0))[0] == []


async def test_a_write_drops_the_copy_and_the_next_generation_is_read(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project)
    await _load(store, 20)
    query = np.random.default_rng(3).normal(size=DIM).tolist()
    for _ in range(2):
        await store.vector_search(query, NO_FILTER, 5)
    old = await _copied(store)
    # A new file holding the query's own direction: the best hit once written.
    await store.replace_files(
        "r1", [file_batch("r1", "pkg/new.py", ["def exact_match():\n    pass"], [query])]
    )
    hits, total = await store.vector_search(query, NO_FILTER, 5)
    assert total == 81 and hits[0].chunk.file_path == "pkg/new.py"
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert _copy_of(store).held is None  # dropped by the search that found it stale
    await store.vector_search(query, NO_FILTER, 5)  # the new generation's second search
    new = await _copied(store)
    assert new.generation > old.generation and len(new.seqs) == 81
    hits, total = await store.vector_search(query, NO_FILTER, 5)
    assert total == 81 and hits[0].chunk.file_path == "pkg/new.py"
    # A deleted file goes with the next write's generation too.
    await store.delete_files("r1", ["pkg/new.py"])
    hits, total = await store.vector_search(query, NO_FILTER, 5)
    assert total == 80 and all(h.chunk.file_path != "pkg/new.py" for h in hits)


async def test_no_copy_past_its_budget_or_with_filters(db: PgDatabase, project: str) -> None:
    store = PgChunkStore(db, project, caches=PgCaches(vector_floats=100 * DIM))
    await _load(store, 30)  # 120 vectors: over 100
    query = np.random.default_rng(5).normal(size=DIM).tolist()
    for _ in range(4):
        await store.vector_search(query, NO_FILTER, 5)
    await asyncio.sleep(0.2)
    assert _copy_of(store).held is None
    roomy = PgChunkStore(db, project)
    for _ in range(2):
        await roomy.vector_search(query, NO_FILTER, 5)
    await _copied(roomy)
    # A filtered search is the database's.
    flt = NO_FILTER.model_copy(update={"directory": "pkg"})
    hits, total = await roomy.vector_search(query, flt, 5)
    assert total == 120 and len(hits) == 5
    # Dropped on request: the next searches read from the database again.
    roomy.drop_caches()
    assert _copy_of(roomy).held is None and len(chunks_of(roomy)) == 0
    hits, total = await roomy.vector_search(query, NO_FILTER, 5)
    assert total == 120 and len(hits) == 5
