"""Adapter factories for the contract suites: each test gets a fresh adapter.

Every contract test runs against each factory: the in-memory reference adapters and the
Postgres ones (a fresh project schema per test on the session's test server; the chunk store
also with every in-process cache off, ``postgres-nocache``, and for the lexical suite with its
terms packed, ``postgres-packed``); the hashing
embedder, the HTTP embedders against real servers on 127.0.0.1 (``tests.embedding_servers``),
the default ONNX model, and the local model when the ``local`` extra is installed (one instance
each for the session: a model takes seconds to load or derive). The task stores are also
shared by concurrent clients (``task_clients``: asyncio tasks over memory, OS processes over
Postgres; see ``tests.contract.task_clients``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.local import LocalEmbedder, local_extra_installed
from codebase_mcp_search.adapters.memory import (
    InMemoryChunkStore,
    InMemoryJobQueue,
    InMemoryTaskRepo,
)
from codebase_mcp_search.adapters.ollama import OllamaEmbedder
from codebase_mcp_search.adapters.onnx import OnnxEmbedder
from codebase_mcp_search.adapters.openai import OpenAICompatibleEmbedder
from codebase_mcp_search.adapters.postgres import (
    PgCaches,
    PgChunkStore,
    PgDatabase,
    PgJobQueue,
    PgTaskRepo,
)
from codebase_mcp_search.adapters.postgres.chunk_store.packing import PackConfig
from codebase_mcp_search.adapters.postgres.schema import GLOBAL_SCHEMA
from codebase_mcp_search.core.ports import ChunkStore, Embedder, IndexedFile, JobQueue, TaskRepo
from tests.conftest import new_project_id
from tests.contract.task_clients import AsyncioClients, ProcessClients, TaskClients
from tests.embedding_servers import OPENAI_MODEL, embedding_server

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
async def _pg_store_uncached(request: pytest.FixtureRequest) -> AsyncIterator[PgChunkStore]:
    """The store with no cache layered on its components: every answer from the database."""
    async with _pg_database(request) as (db, project):
        yield PgChunkStore(db, project, caches=PgCaches.off())


class PackedPgChunkStore(PgChunkStore):
    """``PgChunkStore`` whose every term is packed at its first write that holds chunks
    (``chunk_store.packing``, as ``optimize`` packs a large project's common terms), and never
    again: each later write reaches a search as a correction of that build."""

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        await super().replace_files(repository_id, files)
        await self.optimize()


@asynccontextmanager
async def pg_store_packed(request: pytest.FixtureRequest) -> AsyncIterator[PgChunkStore]:
    """The store reading packed terms (``PackedPgChunkStore``), for the lexical suite."""
    packing = PackConfig(min_docs=1, min_df=1, rebuild_min=10**12, rebuild_share=1e12)
    async with _pg_database(request) as (db, project):
        yield PackedPgChunkStore(db, project, packing=packing)


@asynccontextmanager
async def _pg_tasks(request: pytest.FixtureRequest) -> AsyncIterator[PgTaskRepo]:
    async with _pg_database(request) as (db, project):
        yield PgTaskRepo(db, project)


@asynccontextmanager
async def _memory_task_clients(request: pytest.FixtureRequest) -> AsyncIterator[AsyncioClients]:
    yield AsyncioClients(InMemoryTaskRepo())


@asynccontextmanager
async def _pg_task_clients(request: pytest.FixtureRequest) -> AsyncIterator[ProcessClients]:
    """Clients in processes of their own on the test's project (``task_clients``)."""
    async with _pg_database(request) as (db, project):
        url: str = request.getfixturevalue("pg_url")
        tmp: Path = request.getfixturevalue("tmp_path")
        yield ProcessClients(PgTaskRepo(db, project), url, project, tmp)


@asynccontextmanager
async def _memory_jobs(request: pytest.FixtureRequest) -> AsyncIterator[InMemoryJobQueue]:
    yield InMemoryJobQueue()


@asynccontextmanager
async def _pg_jobs(request: pytest.FixtureRequest) -> AsyncIterator[PgJobQueue]:
    """A queue of its own in the shared jobs table, deleted afterwards."""
    async with _pg_database(request) as (db, project):
        try:
            yield PgJobQueue(db, queue=project)
        finally:
            async with db.connection() as conn:
                await conn.execute(f"DELETE FROM {GLOBAL_SCHEMA}.jobs WHERE queue = $1", project)


@asynccontextmanager
async def _hashing(request: pytest.FixtureRequest) -> AsyncIterator[HashingEmbedder]:
    yield HashingEmbedder()


@asynccontextmanager
async def _hashing_64(request: pytest.FixtureRequest) -> AsyncIterator[HashingEmbedder]:
    yield HashingEmbedder(dimension=64)


@asynccontextmanager
async def _ollama(request: pytest.FixtureRequest) -> AsyncIterator[OllamaEmbedder]:
    with embedding_server() as server:
        async with httpx.AsyncClient() as client:
            embedder = OllamaEmbedder(client, server.url)
            await embedder.open()
            yield embedder


@asynccontextmanager
async def _openai(request: pytest.FixtureRequest) -> AsyncIterator[OpenAICompatibleEmbedder]:
    with embedding_server(api_key="sk-test") as server:
        async with httpx.AsyncClient() as client:
            embedder = OpenAICompatibleEmbedder(
                client, server.openai_url, OPENAI_MODEL, api_key="sk-test"
            )
            await embedder.open()
            yield embedder


@pytest.fixture(scope="session")
def _local_embedder() -> LocalEmbedder:
    """One LocalEmbedder for the session: loading the model takes seconds (at the first open)."""
    return LocalEmbedder()


@asynccontextmanager
async def _local(request: pytest.FixtureRequest) -> AsyncIterator[LocalEmbedder]:
    embedder: LocalEmbedder = request.getfixturevalue("_local_embedder")
    await embedder.open()
    yield embedder


@pytest.fixture(scope="session")
def _onnx_embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxEmbedder:
    """The default embedder (its int8 graph derived once for the session, into a temporary
    cache)."""
    return OnnxEmbedder(cache_dir=tmp_path_factory.mktemp("onnx-models"))


@asynccontextmanager
async def _onnx(request: pytest.FixtureRequest) -> AsyncIterator[OnnxEmbedder]:
    embedder: OnnxEmbedder = request.getfixturevalue("_onnx_embedder")
    await embedder.open()
    yield embedder


CHUNK_STORES: dict[str, Factory] = {
    "memory": _memory_store,
    "postgres": _pg_store,
    "postgres-nocache": _pg_store_uncached,
}
TASK_REPOS: dict[str, Factory] = {"memory": _memory_tasks, "postgres": _pg_tasks}
TASK_CLIENTS: dict[str, Factory] = {"memory": _memory_task_clients, "postgres": _pg_task_clients}
JOB_QUEUES: dict[str, Factory] = {"memory": _memory_jobs, "postgres": _pg_jobs}
EMBEDDERS: dict[str, Factory] = {
    "hash": _hashing,
    "hash-64": _hashing_64,
    "ollama": _ollama,
    "onnx": _onnx,
    "openai": _openai,
}
if local_extra_installed():
    EMBEDDERS["local"] = _local


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


@pytest.fixture(params=sorted(TASK_CLIENTS))
async def task_clients(request: pytest.FixtureRequest) -> AsyncIterator[TaskClients]:
    """A task store and concurrent clients of it, as users share that store."""
    async with TASK_CLIENTS[request.param](request) as clients:
        assert isinstance(clients, AsyncioClients | ProcessClients)
        assert isinstance(clients.repo, TaskRepo)
        yield clients


@pytest.fixture(params=sorted(JOB_QUEUES))
async def job_queue(request: pytest.FixtureRequest) -> AsyncIterator[JobQueue]:
    async with JOB_QUEUES[request.param](request) as queue:
        assert isinstance(queue, JobQueue)
        yield queue


@pytest.fixture(
    params=[
        # The local model needs torch: not in the fast tier (scripts/test.sh --fast).
        pytest.param(name, marks=pytest.mark.torch) if name == "local" else name
        for name in sorted(EMBEDDERS)
    ]
)
async def embedder(request: pytest.FixtureRequest) -> AsyncIterator[Embedder]:
    async with EMBEDDERS[request.param](request) as adapter:
        assert isinstance(adapter, Embedder)
        yield adapter
