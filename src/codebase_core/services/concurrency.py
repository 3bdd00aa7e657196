"""Concurrency helpers of the services: two awaitables run at once, with neither left running
when the other fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")


async def together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, run concurrently; if one fails, the other is cancelled (and awaited)
    and the failure is raised as is (no stray task left running, no exception group)."""
    a, b = asyncio.ensure_future(first), asyncio.ensure_future(second)
    try:
        # Whichever fails first stops the other (awaiting ``a`` then ``b`` would let ``a``
        # run on after ``b`` failed).
        await asyncio.wait((a, b), return_when=asyncio.FIRST_EXCEPTION)
        for task in (a, b):
            failure = task.exception() if task.done() and not task.cancelled() else None
            if failure is not None:
                raise failure
        return a.result(), b.result()
    except BaseException:
        for task in (a, b):
            task.cancel()
        await asyncio.gather(a, b, return_exceptions=True)
        raise
