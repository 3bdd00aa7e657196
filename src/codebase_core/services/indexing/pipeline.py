"""The batch pipeline of an indexing run: changed files are read, chunked, embedded and
written in batches, the stages overlapping so that a real embedder never waits for chunking
or the database.

While batch N is embedded, the next ones are read and chunked (by a ``ChunkingRun``: worker
processes, or one thread) and earlier batches are written. Up to ``WRITE_DEPTH`` writes are in
flight; a write once started is shielded from the run's cancellation (each is one transaction,
so every file stays whole). Batches hold disjoint files, so their order does not matter.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from codebase_mcp_search.core.errors import CoreError, FileUnreadable
from codebase_mcp_search.core.models import FileError, PreparedFile, ScanEntry
from codebase_mcp_search.core.ports import ChunkingRun, SourceTree
from codebase_mcp_search.core.services.indexing.progress import CancellationToken

# Batch writes in flight at once: the store prepares one (COPY data, in a thread) while the
# database takes the other. Two keep both busy; more would only hold more batches in memory.
WRITE_DEPTH = 2

Prepared = tuple[list[PreparedFile], list[FileError]]
"""A batch read and chunked: its files ready to embed, and those that could not be read."""
Preparing = asyncio.Task[Prepared]
Unit = tuple[int, Sequence[ScanEntry] | Preparing]
"""A unit of work: (files it counts for in progress, a batch to prepare or its preparation)."""


async def read_and_chunk(
    source: SourceTree,
    root: str,
    repo_id: str,
    batch: Sequence[ScanEntry],
    chunking: ChunkingRun,
) -> Prepared:
    """Read a batch's files and chunk those that decode; the others become ``FileError``s."""
    texts: list[tuple[ScanEntry, str]] = []
    errors: list[FileError] = []
    read = await source.read_texts(root, [entry.path for entry in batch])
    for entry, text in zip(batch, read, strict=True):
        if isinstance(text, FileUnreadable):
            errors.append(FileError(path=entry.path, error=text.message))
        else:
            texts.append((entry, text))
    return await chunking.chunk(repo_id, texts), errors


@dataclass(frozen=True, slots=True)
class Stages:
    """What the pipeline does with each batch; ``embed`` attaches vectors in place."""

    prepare: Callable[[Sequence[ScanEntry], ChunkingRun], Coroutine[Any, Any, Prepared]]
    embed: Callable[[list[PreparedFile]], Awaitable[None]]
    write: Callable[[list[PreparedFile], int], Coroutine[Any, Any, None]]


async def run_batches(
    units: collections.deque[Unit],
    stages: Stages,
    start_chunking: Callable[[], tuple[ChunkingRun, int]],
    token: CancellationToken,
    errors: list[FileError],
) -> None:
    """Prepare, embed and write every unit, adding files that failed to ``errors``.

    ``start_chunking`` gives the chunking run and how many batches to prepare ahead; it is
    closed at the end. On failure or cancellation, preparations under way are cancelled,
    writes already started complete, and then the chunking run is closed.
    """
    ahead: collections.deque[tuple[int, Preparing]] = collections.deque()
    writing: collections.deque[asyncio.Task[None]] = collections.deque()
    chunking: ChunkingRun | None = None
    try:
        chunking, depth = start_chunking()
        while units or ahead:
            token.raise_if_cancelled()
            while units and len(ahead) < depth:
                n, work = units.popleft()
                if not isinstance(work, asyncio.Task):
                    work = asyncio.create_task(stages.prepare(work, chunking))
                ahead.append((n, work))
            n_files, preparing = ahead.popleft()
            prepared, batch_errors = await preparing
            errors.extend(batch_errors)
            await stages.embed(prepared)
            token.raise_if_cancelled()
            while len(writing) >= WRITE_DEPTH:
                # Shielded: cancelling the run does not cancel a write it has started.
                await asyncio.shield(writing.popleft())
            writing.append(asyncio.create_task(stages.write(prepared, n_files)))
        while writing:
            await asyncio.shield(writing.popleft())
    finally:
        try:
            started = [t for _, t in ahead] + [t for _, t in units if isinstance(t, asyncio.Task)]
            for task in started:
                task.cancel()
            for task in started:
                with contextlib.suppress(asyncio.CancelledError, CoreError):
                    await task
            # Writes already started complete (each is one transaction); their own
            # failure, if any, was raised above or gives way to what stopped the run.
            for in_flight in writing:
                with contextlib.suppress(Exception):
                    await asyncio.shield(in_flight)
        finally:
            if chunking is not None:
                # Queued batches are dropped; one a worker has started finishes first.
                await chunking.close()
