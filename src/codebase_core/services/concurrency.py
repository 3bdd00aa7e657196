"""Concurrency helpers of the services: awaitables run at once, with none left running when
another fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

A = TypeVar("A")
B = TypeVar("B")


async def together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, run concurrently; if one fails, the other is cancelled (and awaited)
    and the failure is raised as is (no stray task left running, no exception group)."""
    a, b = asyncio.ensure_future(first), asyncio.ensure_future(second)
    await _all_or_none((a, b))
    return a.result(), b.result()


async def all_of(items: Sequence[Awaitable[A]]) -> list[A]:
    """Every result, in order, run concurrently, as ``together`` runs two."""
    tasks = [asyncio.ensure_future(item) for item in items]
    if tasks:
        await _all_or_none(tasks)
    return [t.result() for t in tasks]


async def _all_or_none(tasks: Sequence[asyncio.Future[Any]]) -> None:
    try:
        # Whichever fails first stops the others (awaiting them in turn would let one run on
        # after another failed).
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            failure = task.exception() if task.done() and not task.cancelled() else None
            if failure is not None:
                raise failure
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
