"""The local tree's work in a thread that stops with the call that asked for it.

A thread cannot be interrupted: cancelling the task that awaits ``asyncio.to_thread`` only
stops the waiting, and a walk of a whole disk went on reading for minutes after its job was
cancelled. Here the work asks ``stopped()`` between files; it answers True once the awaiting
task is cancelled (or the caller's own check says so), and a cancelled call returns only once
the thread has stopped, so nothing it started reads on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from codebase_mcp_search.core.errors import Cancelled

T = TypeVar("T")

Stopped = Callable[[], bool]
"""Asked between files: True when the work should stop (it then raises ``Cancelled``)."""


def never() -> bool:
    """The check of work that nothing stops (a call on the event loop's own thread)."""
    return False


def check(stopped: Stopped) -> None:
    """Raise ``Cancelled`` when ``stopped()`` says so."""
    if stopped():
        raise Cancelled("reading the repository's files was cancelled")


async def in_thread(work: Callable[..., T], *args: Any, cancelled: Stopped | None = None) -> T:
    """``work(*args, stopped)`` in a thread, ``stopped`` answering True once this call is
    cancelled or ``cancelled()`` is True. Raises what ``work`` raises (``Cancelled`` when it stopped for
    ``cancelled``) and ``CancelledError`` when cancelled, once ``work`` has ended."""
    stop = threading.Event()

    def stopped() -> bool:
        return stop.is_set() or (cancelled is not None and cancelled())

    running = asyncio.ensure_future(asyncio.to_thread(work, *args, stopped))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        stop.set()
        # The work stops at its next check: one file's read at most. Its outcome (a
        # ``Cancelled``) is nobody's to see; seen here, it is not logged as lost.
        running.add_done_callback(_seen)
        await asyncio.wait([running])
        raise


def _seen(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()
