"""What a caller hands a long indexing run: a progress callback and a cancellation token."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from codebase_mcp_search.core.errors import Cancelled
from codebase_mcp_search.core.models import ProgressPhase

ProgressCallback = Callable[[ProgressPhase, int, int], Awaitable[None] | None]


class CancellationToken:
    """Set by a caller to ask long work to stop at its next safe point."""

    def __init__(self) -> None:
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise Cancelled("indexing was cancelled; files written so far are consistent")


async def report(
    callback: ProgressCallback | None, phase: ProgressPhase, done: int, total: int
) -> None:
    """Tell ``callback`` (sync or async, if any) that ``done`` of ``total`` of ``phase`` are done."""
    if callback is None:
        return
    outcome = callback(phase, done, total)
    if inspect.isawaitable(outcome):
        await outcome


@dataclass(slots=True)
class RunCounts:
    """What an indexing run has done so far, kept current by the run."""

    files_scanned: int = 0
    files_to_index: int = 0
    """Files new or changed since the last run (known once the scan is diffed)."""
    files_chunked: int = 0
    files_indexed: int = 0
    chunks_created: int = 0
    files_written: int = 0
    embedded: int = 0
    cached: int = 0
    truncated: int = 0
    to_embed: int = 0
    """Chunk texts known to need the model so far (the embedding phase's growing total)."""
