"""ChunkingPool contract, on the default (one thread) and on worker processes: a run's
``chunk`` gives what ``chunk_files`` gives, for batches in flight together, then closes."""

from __future__ import annotations

import asyncio

import pytest

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.adapters.workers import ProcessChunkingPool, ThreadChunkingPool
from codebase_mcp_search.core.chunking import chunk_files
from codebase_mcp_search.core.models import ScanEntry, sha256_hex
from codebase_mcp_search.core.ports import ChunkingPool, ChunkingRun

TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)


@pytest.fixture(params=["thread", "processes"])
def pool(request: pytest.FixtureRequest) -> ChunkingPool:
    return ThreadChunkingPool() if request.param == "thread" else ProcessChunkingPool()


def _batch(first: int, n: int) -> list[tuple[ScanEntry, str]]:
    texts = [
        (f"pkg/m{i}.py", f"def f{i}(x):\n    return x * {i}\n\n\nclass C{i}:\n    pass\n")
        for i in range(first, first + n)
    ]
    return [
        (
            ScanEntry(path=p, size=len(t), content_hash=sha256_hex(t), language="python"),
            t,
        )
        for p, t in texts
    ]


async def test_runs_chunk_as_chunk_files_does_with_batches_in_flight_together(
    pool: ChunkingPool,
) -> None:
    assert isinstance(pool, ChunkingPool)
    run = pool.start(2, CHUNKER, TOKENS)
    assert isinstance(run, ChunkingRun)
    try:
        batches = [_batch(i * 3, 3) for i in range(4)] + [[]]
        results = await asyncio.gather(*(run.chunk("r1", b) for b in batches))
    finally:
        await run.close()
    assert results == [chunk_files(CHUNKER, TOKENS, "r1", b) for b in batches]
    assert results[-1] == [] and all(len(r) == 3 for r in results[:-1])
    assert [p.file.path for p in results[0]] == ["pkg/m0.py", "pkg/m1.py", "pkg/m2.py"]


async def test_a_run_closed_with_nothing_chunked_ends_cleanly(pool: ChunkingPool) -> None:
    run = pool.start(2, CHUNKER, TOKENS)
    await run.close()
