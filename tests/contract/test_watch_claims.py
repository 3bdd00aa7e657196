"""WatchClaims contract: among the claimants of one store (processes sharing a database, or
one memory store), one watches a repository at a time; every adapter passes every test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from codebase_mcp_search.adapters.memory import InMemoryWatchClaims
from codebase_mcp_search.adapters.postgres import PgDatabase, PgWatchClaims
from codebase_mcp_search.core.ports.watching import WatchClaims
from tests.conftest import new_project_id

Pair = tuple[WatchClaims, WatchClaims]


@asynccontextmanager
async def _memory(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    shared: dict[tuple[str, str], object] = {}
    yield InMemoryWatchClaims(shared), InMemoryWatchClaims(shared)


@asynccontextmanager
async def _postgres(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    url: str = request.getfixturevalue("pg_url")
    tmp: Path = request.getfixturevalue("tmp_path")
    db = PgDatabase(url, data_dir=tmp)
    one, two = PgWatchClaims(db), PgWatchClaims(db)
    try:
        yield one, two
    finally:
        for claims in (one, two):
            with contextlib.suppress(Exception):
                await claims.close()
        await db.close()


PAIRS: dict[str, Callable[[pytest.FixtureRequest], AbstractAsyncContextManager[Pair]]] = {
    "memory": _memory,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(PAIRS))
async def claimants(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    """Two claimants of one store, as two processes on one database are."""
    async with PAIRS[request.param](request) as pair:
        yield pair


async def test_one_claimant_watches_a_repository(claimants: Pair) -> None:
    one, two = claimants
    project = new_project_id()
    assert isinstance(one, WatchClaims)
    assert await one.claim(project, "/repo")
    assert await one.claim(project, "/repo")  # its own claim again
    assert not await two.claim(project, "/repo")
    # Another repository, or the same root in another project, is free.
    assert await two.claim(project, "/other")
    assert await two.claim(new_project_id(), "/repo")
    assert await one.check() and await two.check()


async def test_a_released_claim_is_taken_by_another(claimants: Pair) -> None:
    one, two = claimants
    project = new_project_id()
    assert await one.claim(project, "/repo")
    await two.release(project, "/repo")  # not its claim: nothing changes
    assert not await two.claim(project, "/repo")
    await one.release(project, "/repo")
    await one.release(project, "/repo")  # twice: no error
    assert await two.claim(project, "/repo")
    assert not await one.claim(project, "/repo")
