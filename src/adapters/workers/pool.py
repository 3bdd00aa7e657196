"""ProcessChunkingPool: a ``ChunkingPool`` of spawned processes (``concurrent.futures``).

One worker asked for is one thread (``ThreadChunkingPool``): a process would cost its start-up
and gain nothing over a thread of this one.

Each run gets its own ``ProcessPoolExecutor``: its workers receive the chunker and token
counter once, in their initializer, and then chunk one batch per task. Processes are spawned,
not forked: a forked copy of a process running an event loop, threads and database
connections is not safe. A spawned process would first import the parent's ``__main__`` (the
CLI, a bench script, pytest: the whole application and its server stack) for a job that needs
none of it, so a blank module stands in for ``__main__`` while each process is launched.

A worker ends within a second of its parent, however the parent ends (``parent``): a SIGKILLed
server or worker otherwise left its workers, and multiprocessing's resource tracker (whose pipe
they hold), adopted by init.
"""

from __future__ import annotations

import asyncio
import multiprocessing.context
import os
import signal
import sys
import threading
import types
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from codebase_mcp_search.adapters.workers.parent import exit_with_parent
from codebase_mcp_search.adapters.workers.threads import ThreadChunkingPool, ThreadChunkingRun
from codebase_mcp_search.core.chunking import chunk_files
from codebase_mcp_search.core.models import PreparedFile, ScanEntry
from codebase_mcp_search.core.ports import Chunker, TokenCounter


class ProcessChunkingPool:
    """Spawned worker processes (``concurrent.futures``) chunking the files of one run.

    ``prestart`` starts a run's processes ahead of it, when the caller knows early that one
    will come (a first index: their start-up, a second of imports on a busy machine, then
    overlaps the database's); the next ``start`` with the same workers, chunker and token
    counter takes them, any other ``start`` or ``close`` ends them."""

    def __init__(self) -> None:
        self._warm: tuple[int, Chunker, TokenCounter, ProcessPoolExecutor] | None = None
        self._lock = threading.Lock()

    def prestart(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> None:
        """Start the processes of a run to come (none for one worker, or if some wait)."""
        with self._lock:
            if workers > 1 and self._warm is None:
                self._warm = (workers, chunker, tokens, _process_pool(workers, chunker, tokens))

    def start(
        self, workers: int, chunker: Chunker, tokens: TokenCounter
    ) -> ProcessChunkingRun | ThreadChunkingRun:
        if workers <= 1:  # a thread (the early batches of a run): the processes wait on
            return ThreadChunkingPool().start(1, chunker, tokens)
        with self._lock:
            warm, self._warm = self._warm, None
        if warm is not None:
            if warm[:3] == (workers, chunker, tokens):
                return ProcessChunkingRun(warm[3], chunker, tokens)
            warm[3].shutdown(wait=False, cancel_futures=True)
        return ProcessChunkingRun(_process_pool(workers, chunker, tokens), chunker, tokens)

    async def close(self) -> None:
        """End the processes started ahead and not taken."""
        with self._lock:
            warm, self._warm = self._warm, None
        if warm is not None:
            await asyncio.to_thread(warm[3].shutdown, wait=True, cancel_futures=True)


class ProcessChunkingRun:
    """The processes of one run; a lost worker's batch is chunked in a thread instead."""

    def __init__(self, pool: ProcessPoolExecutor, chunker: Chunker, tokens: TokenCounter) -> None:
        self._pool, self._chunker, self._tokens = pool, chunker, tokens

    async def chunk(
        self, repository_id: str, texts: Sequence[tuple[ScanEntry, str]]
    ) -> list[PreparedFile]:
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, _chunk_in_worker, repository_id, texts)
        except BrokenProcessPool:
            pass  # a worker died (killed, out of memory): chunk here instead
        return await asyncio.to_thread(
            chunk_files, self._chunker, self._tokens, repository_id, texts
        )

    async def close(self) -> None:
        # Queued batches are dropped; one a worker has started finishes first.
        await asyncio.to_thread(self._pool.shutdown, wait=True, cancel_futures=True)


# The chunker and token counter of a worker process, set once by the pool's initializer.
_worker_parts: tuple[Chunker, TokenCounter] | None = None


def _init_worker(chunker: Chunker, tokens: TokenCounter, parent: int) -> None:
    global _worker_parts
    _worker_parts = (chunker, tokens)
    exit_with_parent(parent)


def _chunk_in_worker(repo_id: str, texts: Sequence[tuple[ScanEntry, str]]) -> list[PreparedFile]:
    assert _worker_parts is not None, "worker process started without _init_worker"
    return chunk_files(*_worker_parts, repo_id, texts)


def _ready() -> None:
    """A first task for each worker: makes the pool start its processes."""


# The parent's preparation data names __main__ only while a process is launched: the blank
# module stands in for that moment, under a lock (pools may be created by two threads).
_BLANK_MAIN = types.ModuleType("__main__")
_LAUNCHING = threading.Lock()


class _WorkerProcess(multiprocessing.context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _LAUNCHING:
            main = sys.modules["__main__"]
            sys.modules["__main__"] = _BLANK_MAIN
            # Launched with SIGINT blocked, which the process keeps (a mask is inherited and
            # survives exec): Ctrl-C reaches the terminal's whole process group, and a worker
            # still importing, or chunking, would print a KeyboardInterrupt traceback. The
            # parent handles it and ends its workers.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                return multiprocessing.context.SpawnProcess._Popen(process_obj)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                sys.modules["__main__"] = main


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _WorkerProcess


def _process_pool(workers: int, chunker: Chunker, tokens: TokenCounter) -> ProcessPoolExecutor:
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_WorkerContext(),
        initializer=_init_worker,
        initargs=(chunker, tokens, os.getpid()),
    )
    # The pool starts a process per submit while it has no idle one: start them all now, so
    # their imports overlap the reading of the first batches.
    try:
        for _ in range(workers):
            pool.submit(_ready)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    return pool
