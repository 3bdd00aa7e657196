"""Composition root: the only place that wires adapters to ports (with ``embedders``, which
chooses the embedder, and ``projects``, which holds each project's stores and services)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from dependency_injector import containers, providers

from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import (
    IndexingService,
    JobService,
    SearchService,
    TaskService,
)
from codebase_mcp_search.entrypoints.embedders import embedder_choice
from codebase_mcp_search.entrypoints.projects import ProjectServices, ProjectStores
from codebase_mcp_search.entrypoints.settings import Settings

if TYPE_CHECKING:
    import httpx

    from codebase_mcp_search.adapters.filesystem import LocalSourceTree
    from codebase_mcp_search.adapters.memory import InMemoryJobQueue
    from codebase_mcp_search.adapters.postgres import AnnConfig, PgCaches, PgDatabase, PgJobQueue
    from codebase_mcp_search.adapters.tokens import TiktokenCounter
    from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
    from codebase_mcp_search.adapters.workers import ProcessChunkingPool

# Each adapter is imported by the provider that makes it, when it is first made: a command
# loads what it uses (a lexical search: the Postgres chunk store, not the chunker, the token
# counter, the worker pool or the memory adapters). A server imports them as it starts
# (``preload``), so that no first call pays for them.
SERVER_MODULES = (
    "codebase_mcp_search.adapters.filesystem",
    "codebase_mcp_search.adapters.memory.chunk_store",
    "codebase_mcp_search.adapters.memory.job_queue",
    "codebase_mcp_search.adapters.memory.task_repo",
    "codebase_mcp_search.adapters.postgres.chunk_store",
    "codebase_mcp_search.adapters.postgres.database",
    "codebase_mcp_search.adapters.postgres.job_queue",
    "codebase_mcp_search.adapters.postgres.postings",
    "codebase_mcp_search.adapters.postgres.task_repo",
    "codebase_mcp_search.adapters.tokens",
    "codebase_mcp_search.adapters.treesitter",
    "codebase_mcp_search.adapters.workers",
)


def preload() -> None:
    """Import every adapter module a server may use (what the container imported as it loaded,
    before its providers imported their adapters when first used)."""
    for name in SERVER_MODULES:
        importlib.import_module(name)


def _ann(m: int, ef_construction: int) -> AnnConfig:
    from codebase_mcp_search.adapters.postgres.ann import AnnConfig

    return AnnConfig(m=m, ef_construction=ef_construction)


def _caches(on: bool) -> PgCaches:
    from codebase_mcp_search.adapters.postgres.chunk_store.caches import PgCaches

    return PgCaches() if on else PgCaches.off()


def _token_counter() -> TiktokenCounter:
    from codebase_mcp_search.adapters.tokens import TiktokenCounter

    return TiktokenCounter()


def _chunker(token_counter: TiktokenCounter, max_tokens: int, min_tokens: int) -> TreeSitterChunker:
    from codebase_mcp_search.adapters.treesitter import TreeSitterChunker

    return TreeSitterChunker(token_counter, max_tokens=max_tokens, min_tokens=min_tokens)


def _source_tree(max_file_bytes: int, allow_secrets: bool) -> LocalSourceTree:
    from codebase_mcp_search.adapters.filesystem import LocalSourceTree

    return LocalSourceTree(max_file_bytes=max_file_bytes, allow_secrets=allow_secrets)


def _chunking_pool() -> ProcessChunkingPool:
    from codebase_mcp_search.adapters.workers import ProcessChunkingPool

    return ProcessChunkingPool()


def _memory_job_queue() -> InMemoryJobQueue:
    from codebase_mcp_search.adapters.memory.job_queue import InMemoryJobQueue

    return InMemoryJobQueue()


def _pg_job_queue(database: PgDatabase, queue: str) -> PgJobQueue:
    from codebase_mcp_search.adapters.postgres.job_queue import PgJobQueue

    return PgJobQueue(database=database, queue=queue)


async def postgres_database(
    url: str | None,
    data_dir: Path,
    pool_size: int,
    connect_timeout: float,
    statement_timeout: float,
    idle_s: float,
    cache_budget_mb: int,
) -> AsyncIterator[PgDatabase]:
    """The process's Postgres pool (embedded server when ``url`` is None); opens lazily."""
    from codebase_mcp_search.adapters.postgres.database import PgDatabase

    database = PgDatabase(
        url,
        data_dir=Path(data_dir),
        pool_size=pool_size,
        connect_timeout_s=connect_timeout,
        statement_timeout_s=statement_timeout,
        idle_s=idle_s,
        cache_budget_mb=cache_budget_mb,
    )
    try:
        yield database
    finally:
        await database.close()


async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    """The process's one HTTP client (timeouts are set per request by the embedders)."""
    import httpx  # here: a process that embeds nothing over HTTP never loads it

    async with httpx.AsyncClient(follow_redirects=True) as client:
        yield client


class Container(containers.DeclarativeContainer):
    """Wires ports to adapters chosen by configuration; each project's services are built once
    (``project_services``).

        Every store and service provider runs in async mode (``build_container``): resolve them
        with ``await``. Resources start lazily, so a memory-store container never starts Postgres.
    """

    config = providers.Configuration()

    database = providers.Resource(
        postgres_database,
        url=config.database_url,
        data_dir=config.data_dir,
        pool_size=config.pool_size,
        connect_timeout=config.connect_timeout,
        statement_timeout=config.statement_timeout,
        idle_s=config.pg_idle_seconds,
        cache_budget_mb=config.cache_budget_mb,
    )
    ann = providers.Singleton(_ann, m=config.hnsw_m, ef_construction=config.hnsw_ef_construction)

    token_counter = providers.Singleton(_token_counter)
    chunker = providers.Singleton(
        _chunker,
        token_counter=token_counter,
        max_tokens=config.chunk_max_tokens,
        min_tokens=config.chunk_min_tokens,
    )
    source_tree = providers.Singleton(
        _source_tree,
        max_file_bytes=config.max_file_bytes,
        allow_secrets=config.allow_secrets,
    )
    project_stores = providers.Singleton(
        ProjectStores,
        database=providers.Selector(config.store, memory=providers.Object(None), postgres=database),
        ann=ann,
        caches=providers.Callable(_caches, on=config.pg_caches),
    )
    # The configured project's; other projects' through ``project_stores`` (or pass
    # ``project_id=`` to these two).
    chunk_store = providers.Callable(
        lambda stores, project_id: stores.chunk_store(project_id),
        stores=project_stores,
        project_id=config.project,
    )
    task_repo = providers.Callable(
        lambda stores, project_id: stores.task_repo(project_id),
        stores=project_stores,
        project_id=config.project,
    )
    http = providers.Resource(http_client)
    embedder_choice = providers.Resource(embedder_choice, config=config, client=http)
    embedder = providers.Callable(lambda choice: choice.embedder, embedder_choice)
    fusion = providers.Singleton(
        FusionConfig,
        method=config.fusion_method,
        normalisation=config.fusion_normalisation,
        semantic_weight=config.fusion_semantic_weight,
        lexical_weight=config.fusion_lexical_weight,
        rrf_k=config.fusion_rrf_k,
    )

    # The process's one pool (``Workspaces.index_ahead`` ends workers it started ahead).
    chunking_pool = providers.Singleton(_chunking_pool)
    indexing_service = providers.Factory(
        IndexingService,
        store=chunk_store,
        source=source_tree,
        chunker=chunker,
        tokens=token_counter,
        embedder=embedder,
        batch_files=config.index_batch_files,
        vector_batch=config.vector_batch_chunks,
        workers=config.index_workers,
        chunking_pool=chunking_pool,
    )
    # The embedder's provider, not the embedder: a search resolves it only when it has vectors
    # to compare, so a lexical search never loads a model.
    search_service = providers.Factory(
        SearchService,
        store=chunk_store,
        embedder=embedder.provider,
        fusion=fusion,
        source=source_tree,
        ranking=providers.Singleton(RankingConfig, enabled=config.ranking),
        stem_weight=config.lexical_stem_weight,
    )
    task_service = providers.Factory(TaskService, repo=task_repo)
    project_services = providers.Singleton(
        ProjectServices,
        stores=project_stores,
        indexing=indexing_service.provider,
        search=search_service.provider,
        tasks=task_service.provider,
    )
    # One queue for every project of the store: workers claim jobs of any project. One
    # service, so that the workers of this process hear of its submits and cancels.
    job_queue = providers.Selector(
        config.store,
        memory=providers.Singleton(_memory_job_queue),
        postgres=providers.Singleton(_pg_job_queue, database=database, queue=config.job_queue),
    )
    job_service = providers.Singleton(JobService, queue=job_queue)


def build_container(settings: Settings | None = None) -> Container:
    """A container configured from ``settings`` (read from the environment when omitted)."""
    container = Container()
    container.config.from_pydantic(settings or Settings())
    for provider in (
        container.project_stores,
        container.project_services,
        container.chunk_store,
        container.task_repo,
        container.embedder_choice,
        container.embedder,
        container.indexing_service,
        container.search_service,
        container.task_service,
        container.job_queue,
        container.job_service,
    ):
        provider.enable_async_mode()
    return container


@asynccontextmanager
async def running_container(settings: Settings | None = None) -> AsyncIterator[Container]:
    """``build_container(settings)``, with its started resources shut down on exit."""
    container = build_container(settings)
    try:
        yield container
    finally:
        stopped = container.shutdown_resources()
        if inspect.isawaitable(stopped):
            await stopped
