"""Where indexing chunks: early, in a thread, while the lock is taken (chunks of files that
turn out unchanged dropped), and in worker processes for many changed files (the same index
as in one thread, workers started only once the changed files are known)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import NoReturn

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.adapters.workers import ProcessChunkingPool
from codebase_mcp_search.adapters.workers import pool as workers_pool
from codebase_mcp_search.adapters.workers.pool import ProcessChunkingRun
from codebase_mcp_search.adapters.workers.threads import ThreadChunkingRun
from codebase_mcp_search.core import chunking
from codebase_mcp_search.core.models import IndexRequest, IndexResult, IndexStatus
from codebase_mcp_search.core.ports import Chunker, TokenCounter
from codebase_mcp_search.core.services import IndexingService
from codebase_mcp_search.core.services.indexing import speculative
from tests.factories import THREADS
from tests.unit.indexing_doubles import (
    CHUNKER,
    FILES,
    ROOT,
    TOKENS,
    dump,
    new_service,
    numbered_files,
)


class _RecordingChunker:
    """The real chunker, noting each file it chunks and whether the lock was held then."""

    def __init__(self, store: _GatedLockStore) -> None:
        self._store = store
        self.chunked: list[tuple[str, bool]] = []
        self._more = threading.Condition()

    def chunk(self, path, text, language):  # type: ignore[no-untyped-def]
        with self._more:
            self.chunked.append((path, self._store.locked))
            self._more.notify_all()
        return CHUNKER.chunk(path, text, language)

    async def wait_for(self, n_files: int) -> None:
        """Until ``n_files`` were chunked (chunking runs in a thread)."""

        def wait() -> bool:
            with self._more:
                return self._more.wait_for(lambda: len(self.chunked) >= n_files, timeout=10)

        assert await asyncio.to_thread(wait)


class _GatedLockStore(InMemoryChunkStore):
    """Grants the indexing lock when the test opens the gate (a server still starting)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.locked = False

    @contextlib.asynccontextmanager
    async def indexing_lock(self, repository_id, *, wait):  # type: ignore[no-untyped-def]
        await self.gate.wait()
        async with super().indexing_lock(repository_id, wait=wait):
            self.locked = True
            try:
                yield
            finally:
                self.locked = False


async def _early_run(
    tree: InMemorySourceTree, store: _GatedLockStore
) -> tuple[_RecordingChunker, IndexResult]:
    """Index with the lock held back until every file was chunked early (in a thread)."""
    chunker = _RecordingChunker(store)
    service = IndexingService(
        store, tree, chunker, TOKENS, HashingEmbedder(64), batch_files=3, chunking_pool=THREADS
    )  # type: ignore[arg-type]
    store.gate.clear()
    run = asyncio.create_task(service.index(IndexRequest(root=ROOT)))
    n_files = len((await tree.scan(ROOT)).files)
    await chunker.wait_for(n_files)
    await asyncio.sleep(0.02)
    assert not run.done()
    store.gate.set()
    return chunker, await run


async def test_files_are_chunked_while_the_lock_is_taken_and_used_once_it_is_held() -> None:
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: numbered_files(10)})
    chunker, result = await _early_run(tree, store)
    assert all(not locked for _, locked in chunker.chunked)
    assert sorted(p for p, _ in chunker.chunked) == sorted(numbered_files(10))  # each once
    assert result.status is IndexStatus.SUCCESS and result.files_indexed == 10
    reference = InMemoryChunkStore()
    await new_service(tree, reference, HashingEmbedder(64)).index(IndexRequest(root=ROOT))
    assert dump(await store.chunks(result.repository_id)) == dump(
        await reference.chunks(result.repository_id)
    )


async def test_early_chunks_of_files_that_did_not_change_are_dropped() -> None:
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: numbered_files(10)})
    await new_service(tree, store, HashingEmbedder(64)).index(IndexRequest(root=ROOT))
    edited = InMemorySourceTree({ROOT: numbered_files(10, edited=(2, 7))})
    chunker, result = await _early_run(edited, store)
    assert len(chunker.chunked) == 10  # all of them, early, and none again
    assert (result.files_indexed, result.files_unchanged) == (2, 8)
    reference = InMemoryChunkStore()
    await new_service(edited, reference, HashingEmbedder(64)).index(IndexRequest(root=ROOT))
    assert dump(await store.chunks(result.repository_id)) == dump(
        await reference.chunks(result.repository_id)
    )


async def test_early_chunking_stops_at_its_file_limit_and_when_the_lock_is_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(speculative, "EARLY_FILES", 4)
    store = _GatedLockStore()
    chunker = _RecordingChunker(store)
    tree = InMemorySourceTree({ROOT: numbered_files(12)})
    service = IndexingService(
        store, tree, chunker, TOKENS, None, batch_files=2, chunking_pool=THREADS
    )  # type: ignore[arg-type]
    store.gate.clear()
    run = asyncio.create_task(service.index(IndexRequest(root=ROOT)))
    await chunker.wait_for(4)
    await asyncio.sleep(0.05)
    assert len(chunker.chunked) == 4  # no more before the lock
    store.gate.set()
    result = await run
    assert result.files_indexed == 12
    assert sorted(p for p, _ in chunker.chunked) == sorted(numbered_files(12))
    assert [locked for _, locked in chunker.chunked] == [False] * 4 + [True] * 8


def test_chunker_and_token_counter_survive_pickling() -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(CHUNKER))
    text = FILES["app/auth.py"]
    assert copy.chunk("app/auth.py", text, "python") == CHUNKER.chunk("app/auth.py", text, "python")
    assert pickle.loads(pickle.dumps(TOKENS)).count(text) == TOKENS.count(text)


async def test_worker_processes_chunk_exactly_as_one_thread_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 40 files in batches of 2 over 2 spawned worker processes (pool_min_files=0 forces the
    # pool); the index must equal the one built in-process, chunk for chunk and vector for vector.
    files = {
        f"pkg/m{i}.py": f"def f{i}(x):\n    return x * {i}\n\n\nclass C{i}:\n    def m(self):\n"
        f"        return {i}\n"
        for i in range(40)
    }
    indexes = []
    for workers in (1, 2):
        tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in files.items()}})
        store = InMemoryChunkStore()
        service = IndexingService(
            store,
            tree,
            CHUNKER,
            TOKENS,
            HashingEmbedder(64),
            batch_files=2,
            workers=workers,
            pool_min_files=0,
            chunking_pool=ProcessChunkingPool(),
        )
        if workers == 2:  # spawned workers import the real one: no chunking in this process
            monkeypatch.setattr(chunking, "chunk_files", _fail)
            monkeypatch.setattr(workers_pool, "chunk_files", _fail)
        result = await service.index(IndexRequest(root=ROOT))
        assert result.status is IndexStatus.SUCCESS and result.files_indexed == 40
        chunks = await store.chunks(result.repository_id)
        vectors = await store.cached_embeddings("hash-64", [c.content_hash for c in chunks])
        indexes.append(
            (sorted(c.model_dump_json() for c in chunks), {h: list(v) for h, v in vectors.items()})
        )
    assert indexes[0] == indexes[1] and len(indexes[0][0]) >= 80


def _fail(*args: object) -> NoReturn:
    raise AssertionError("chunked in the main process")


class _CountingPool(ProcessChunkingPool):
    """Worker processes, counting the runs that start them (one worker is a thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = 0

    def start(
        self, workers: int, chunker: Chunker, tokens: TokenCounter
    ) -> ProcessChunkingRun | ThreadChunkingRun:
        self.started += workers > 1
        return super().start(workers, chunker, tokens)


async def test_worker_processes_start_only_for_files_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Early chunking runs in a thread: re-indexing an unchanged repository while the store
    starts spawns no worker process; with changes, the pool starts once, after the lock."""
    pool = _CountingPool()
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: numbered_files(30)})
    monkeypatch.setattr(speculative, "EARLY_FILES", 4)  # most edits are left to the workers

    def service() -> IndexingService:
        return IndexingService(
            store,
            tree,
            CHUNKER,
            TOKENS,
            None,
            batch_files=2,
            workers=2,
            pool_min_files=0,
            chunking_pool=pool,
        )

    first = await service().index(
        IndexRequest(root=ROOT)
    )  # the lock at once: no early chunking, a pool
    assert first.files_indexed == 30 and pool.started == 1
    store.gate.clear()
    run = asyncio.create_task(service().index(IndexRequest(root=ROOT)))
    await asyncio.sleep(0.3)  # early chunking of unchanged files, in this process
    store.gate.set()
    again = await run
    assert again.files_unchanged == 30 and pool.started == 1
    tree.put(ROOT, "m3.py", "def f3():\n    return 'edited'\n")
    for i in range(4, 30):
        tree.put(ROOT, f"m{i}.py", f"def f{i}():\n    return {i} + 1\n")
    store.gate.clear()
    run = asyncio.create_task(service().index(IndexRequest(root=ROOT)))
    await asyncio.sleep(0.3)
    store.gate.set()
    edited = await run
    assert edited.files_indexed == 27 and pool.started == 2  # one more, for the 26 left
    reference = InMemoryChunkStore()
    await IndexingService(reference, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS).index(
        IndexRequest(root=ROOT)
    )
    assert dump(await store.chunks(edited.repository_id)) == dump(
        await reference.chunks(edited.repository_id)
    )
