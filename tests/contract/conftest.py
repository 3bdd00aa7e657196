"""Adapter factories for the contract suites: each test gets a fresh adapter.

Every contract test runs against each factory: the in-memory reference adapters and the
Postgres ones (a fresh project schema per test on the session's test server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemoryTaskRepo
from adapters.postgres import PgChunkStore, PgDatabase, PgTaskRepo
from codebase_core.ports import ChunkStore, Embedder, TaskRepo
from tests.conftest import new_project_id

Factory = Callable[[pytest.FixtureRequest], AbstractAsyncContextManager[object]]


@asynccontextmanager
async def _memory_store(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryChunkStore]:
    yield InMemoryChunkStore()


@asynccontextmanager
async def _memory_tasks(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryTaskRepo]:
    yield InMemoryTaskRepo()


@asynccontextmanager
async def _pg_database(request: pytest.FixtureRequest) -> AsyncIterator[tuple[PgDatabase, str]]:
    url: str = request.getfixturevalue("pg_url")
    tmp: Path = request.getfixturevalue("tmp_path")
    db = PgDatabase(url, data_dir=tmp)
    project = new_project_id()
    try:
        yield db, project
    finally:
        await db.drop_workspace(project)
        await db.close()


@asynccontextmanager
async def _pg_store(request: pytest.FixtureRequest) -> AsyncIterator[PgChunkStore]:
    async with _pg_database(request) as (db, project):
        yield PgChunkStore(db, project)


@asynccontextmanager
async def _pg_tasks(request: pytest.FixtureRequest) -> AsyncIterator[PgTaskRepo]:
    async with _pg_database(request) as (db, project):
        yield PgTaskRepo(db, project)


CHUNK_STORES: dict[str, Factory] = {"memory": _memory_store, "postgres": _pg_store}
TASK_REPOS: dict[str, Factory] = {"memory": _memory_tasks, "postgres": _pg_tasks}
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "hash": HashingEmbedder,
    "hash-64": lambda: HashingEmbedder(dimension=64),
}


@pytest.fixture(params=sorted(CHUNK_STORES))
async def chunk_store(request: pytest.FixtureRequest) -> AsyncIterator[ChunkStore]:
    async with CHUNK_STORES[request.param](request) as store:
        assert isinstance(store, ChunkStore)
        yield store


@pytest.fixture(params=sorted(TASK_REPOS))
async def task_repo(request: pytest.FixtureRequest) -> AsyncIterator[TaskRepo]:
    async with TASK_REPOS[request.param](request) as repo:
        assert isinstance(repo, TaskRepo)
        yield repo


@pytest.fixture(params=sorted(EMBEDDERS))
def embedder(request: pytest.FixtureRequest) -> Embedder:
    return EMBEDDERS[request.param]()
