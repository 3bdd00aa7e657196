"""The indexing pipeline: stages overlapping (the next batch given its cached vectors while
the last is written, at most two writes in flight, a started write finished even when the run
is cancelled) and the scan while the lock is taken. Where chunking runs (early, in a thread,
or in worker processes): test_indexing_chunking.py."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import IndexRequest, repository_id_for
from codebase_mcp_search.core.services import IndexingService
from codebase_mcp_search.core.services.indexing import pipeline
from tests.factories import THREADS
from tests.unit.indexing_doubles import (
    CHUNKER,
    ROOT,
    TOKENS,
    HeldStore,
)


class _GatedStore(InMemoryChunkStore):
    """Holds each write until the next batch's vectors are looked up in the embedding cache
    (or the run ends)."""

    def __init__(self, next_embedding: asyncio.Event) -> None:
        super().__init__()
        self._next = next_embedding
        self.overlapped = 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self._next.clear()
        try:
            await asyncio.wait_for(self._next.wait(), timeout=1.0)
            self.overlapped += 1
        except TimeoutError:
            pass  # the last batch: nothing follows it
        await super().replace_files(repository_id, files)

    async def cached_embeddings(self, model, content_hashes):  # type: ignore[no-untyped-def]
        self._next.set()
        return await super().cached_embeddings(model, content_hashes)


async def test_the_next_batch_is_prepared_while_the_last_one_is_written() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(8)}
    started = asyncio.Event()
    store = _GatedStore(started)
    service = IndexingService(
        store,
        InMemorySourceTree({ROOT: files}),
        CHUNKER,
        TOKENS,
        HashingEmbedder(64),
        chunking_pool=THREADS,
        batch_files=2,
    )
    result = await service.index(IndexRequest(root=ROOT))
    # 4 batches: each of the first 3 writes saw the next batch's cache lookup begin.
    assert result.files_indexed == 8
    assert store.overlapped == 3
    assert len(await store.chunks(result.repository_id)) == 8


def _numbered(store: InMemoryChunkStore, n_files: int, batch_files: int) -> IndexingService:
    """A service over ``n_files`` one-function files, written in batches of ``batch_files``."""
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(n_files)}
    return IndexingService(
        store,
        InMemorySourceTree({ROOT: files}),
        CHUNKER,
        TOKENS,
        HashingEmbedder(64),
        chunking_pool=THREADS,
        batch_files=batch_files,
    )


async def test_cancelling_the_run_lets_a_started_write_finish() -> None:
    store = HeldStore()
    service = _numbered(store, 6, batch_files=2)
    run = asyncio.create_task(service.index(IndexRequest(root=ROOT)))
    await store.writing.wait()
    run.cancel()
    await asyncio.sleep(0)
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    # The first batch's write was not cut off: both of its files are stored, whole.
    stored = await store.file_hashes(repository_id_for(ROOT))
    assert len(stored) == 2


class _SlowStore(InMemoryChunkStore):
    """Counts the writes in flight at once (each write yields to the loop a few times)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            for _ in range(5):
                await asyncio.sleep(0.01)
            await super().replace_files(repository_id, files)
        finally:
            self.in_flight -= 1


async def test_two_writes_are_in_flight_and_never_more() -> None:
    store = _SlowStore()
    result = await _numbered(store, 12, batch_files=1).index(IndexRequest(root=ROOT))
    assert result.files_indexed == 12
    assert store.most == pipeline.WRITE_DEPTH == 2
    assert len(await store.chunks(result.repository_id)) == 12


class _ScanFirstTree(InMemorySourceTree):
    """Says when a scan starts."""

    def __init__(self, trees: dict[str, dict[str, bytes]]) -> None:
        super().__init__(trees)
        self.scanning = asyncio.Event()
        self.scans = 0

    async def scan(self, root, cancelled=None):  # type: ignore[no-untyped-def]
        self.scans += 1
        self.scanning.set()
        return await super().scan(root, cancelled)


class _SlowLockStore(InMemoryChunkStore):
    """Takes the lock only once the scan has started (as a server still starting would)."""

    def __init__(self, tree: _ScanFirstTree) -> None:
        super().__init__()
        self._tree = tree

    @contextlib.asynccontextmanager
    async def indexing_lock(self, repository_id, *, wait):  # type: ignore[no-untyped-def]
        await asyncio.wait_for(self._tree.scanning.wait(), 5)
        async with super().indexing_lock(repository_id, wait=wait):
            yield


async def test_the_scan_runs_while_the_lock_is_taken() -> None:
    tree = _ScanFirstTree({ROOT: {"a.py": b"def a():\n    return 1\n"}})
    service = IndexingService(
        _SlowLockStore(tree), tree, CHUNKER, TOKENS, HashingEmbedder(64), chunking_pool=THREADS
    )
    result = await service.index(IndexRequest(root=ROOT))
    assert result.files_indexed == 1 and tree.scans == 1


async def test_a_run_that_waited_for_the_lock_scans_again() -> None:
    tree = _ScanFirstTree({ROOT: {"a.py": b"def a():\n    return 1\n"}})
    store = HeldStore()
    first = asyncio.create_task(
        IndexingService(store, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS).index(
            IndexRequest(root=ROOT)
        )
    )
    await store.writing.wait()  # the first run holds the lock
    second = asyncio.create_task(
        IndexingService(store, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS).index(
            IndexRequest(root=ROOT)
        )
    )
    await asyncio.sleep(0.05)  # its first scan is done; it waits for the lock
    assert tree.scans == 2 and not second.done()
    tree.put(ROOT, "b.py", "def b():\n    return 2\n")  # written while the second run waits
    store.release.set()
    assert (await first).files_indexed == 1
    again = await second
    assert tree.scans == 3  # the first run's, the second's early one, and its fresh one
    assert again.files_indexed == 1 and again.files_unchanged == 1  # b.py, found afresh


async def test_a_bad_root_fails_the_run_without_a_stray_scan_error() -> None:
    store = InMemoryChunkStore()
    service = IndexingService(
        store, InMemorySourceTree({}), CHUNKER, TOKENS, None, chunking_pool=THREADS
    )
    with pytest.raises(ValidationFailed):
        await service.index(IndexRequest(root="/no/such/root"))
