"""What a caller hands a long indexing run: a progress callback and a cancellation token."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from codebase_core.errors import Cancelled
from codebase_core.models import ProgressPhase

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
