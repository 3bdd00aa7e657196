"""Speculative chunking: the first scanned files are chunked while the indexing lock is taken.

Taking the lock may first start the store's server (a fresh embedded one takes a while, on
one core), and which files changed is only known once the store answers. Rather than wait,
batches are prepared in scan order, one at a time in a thread (worker processes would be
started for nothing when no file changed), until ``stop``; ``take`` then keeps what the
changed files need and drops the rest.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from codebase_mcp_search.core.models import ScanEntry, ScanResult
from codebase_mcp_search.core.ports import ChunkingRun
from codebase_mcp_search.core.services.indexing.pipeline import Prepared, Preparing, Unit
from codebase_mcp_search.core.services.indexing.progress import CancellationToken

# At most this many files are chunked before the run knows which files changed.
EARLY_FILES = 4096


class SpeculativeChunking:
    """Prepares batches of the scan's first files until stopped (see the module doc)."""

    def __init__(
        self,
        prepare: Callable[[Sequence[ScanEntry]], Coroutine[Any, Any, Prepared]],
        batch_files: int,
        scan: asyncio.Future[ScanResult],
    ) -> None:
        self._prepare, self._batch_files, self._scan = prepare, batch_files, scan
        self._batches: list[tuple[Sequence[ScanEntry], Preparing]] = []
        self._dropped: list[Preparing] = []
        self._stopping = asyncio.Event()
        self._runner = asyncio.create_task(self._run())

    async def _run(self) -> None:
        scan = self._scan
        stopping: asyncio.Future[Any] = asyncio.create_task(self._stopping.wait())
        try:
            first: list[asyncio.Future[Any]] = [scan, stopping]
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if self._stopping.is_set() or scan.cancelled() or scan.exception() is not None:
                return
            files = scan.result().files[:EARLY_FILES]
            size = self._batch_files
            for i in range(0, len(files), size):
                batch = files[i : i + size]
                task = asyncio.create_task(self._prepare(batch))
                self._batches.append((batch, task))
                await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
                if self._stopping.is_set():
                    return
        finally:
            stopping.cancel()

    async def stop(self) -> None:
        """Start no more batches (the one under way goes on)."""
        self._stopping.set()
        await _settled([self._runner])

    def take(self, changed: Sequence[ScanEntry]) -> tuple[collections.deque[Unit], list[ScanEntry]]:
        """Units of (files kept, preparation) covering the changed files prepared early, in scan
        order, and the changed files left to prepare. Batches with no changed file stop."""
        wanted = {e.path for e in changed}
        units: collections.deque[Unit] = collections.deque()
        covered: set[str] = set()
        for batch, task in self._batches:
            keep = {e.path for e in batch if e.path in wanted}
            covered.update(keep)
            if not keep:
                task.cancel()
                self._dropped.append(task)
            elif len(keep) == len(batch):
                units.append((len(keep), task))
            else:
                units.append((len(keep), asyncio.create_task(_only(task, keep))))
        self._batches = []
        return units, [e for e in changed if e.path not in covered]

    async def close(self) -> None:
        """Cancel what was not taken and wait for it (idempotent)."""
        pending = [self._runner, *self._dropped, *(t for _, t in self._batches)]
        for task in pending:
            task.cancel()
        self._batches, self._dropped = [], []
        await _settled(pending)


async def _settled(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait for tasks to end, their failures (or cancellation) seen and dropped; a cancel of
    the caller itself still raises (``suppress`` around an ``await`` would swallow it)."""
    if tasks:
        await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled():
            task.exception()


async def _only(preparing: Preparing, paths: set[str]) -> Prepared:
    """An early batch's preparation, reduced to the files that changed."""
    prepared, errors = await preparing
    return [p for p in prepared if p.file.path in paths], [e for e in errors if e.path in paths]


@dataclass(slots=True)
class RunStart:
    """What an indexing run begins before it holds its lock (possibly before it is called:
    ``IndexingService.head_start``): the scan, and the chunking of the first files scanned
    in a thread."""

    began: datetime
    token: CancellationToken
    scan: asyncio.Future[ScanResult]
    threads: ChunkingRun
    early: SpeculativeChunking


async def close_start(start: RunStart) -> None:
    """End a start no run took: its chunking and its scan (cancelled, waited for)."""
    await start.early.close()
    await start.threads.close()
    start.scan.cancel()
    await _settled([start.scan])
