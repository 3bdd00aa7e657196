"""Composition root: the only place that wires adapters to ports (with ``embedders``, which
chooses the embedder, and ``projects``, which holds each project's stores and services)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from dependency_injector import containers, providers

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.adapters.memory import InMemoryJobQueue
from codebase_mcp_search.adapters.postgres import AnnConfig, PgCaches, PgDatabase, PgJobQueue
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.adapters.workers import ProcessChunkingPool
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
    ann = providers.Singleton(
        AnnConfig, m=config.hnsw_m, ef_construction=config.hnsw_ef_construction
    )

    token_counter = providers.Singleton(TiktokenCounter)
    chunker = providers.Singleton(
        TreeSitterChunker,
        token_counter=token_counter,
        max_tokens=config.chunk_max_tokens,
        min_tokens=config.chunk_min_tokens,
    )
    source_tree = providers.Singleton(
        LocalSourceTree,
        max_file_bytes=config.max_file_bytes,
        allow_secrets=config.allow_secrets,
    )
    project_stores = providers.Singleton(
        ProjectStores,
        database=providers.Selector(config.store, memory=providers.Object(None), postgres=database),
        ann=ann,
        caches=providers.Callable(
            lambda on: PgCaches() if on else PgCaches.off(), on=config.pg_caches
        ),
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
    chunking_pool = providers.Singleton(ProcessChunkingPool)
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
        memory=providers.Singleton(InMemoryJobQueue),
        postgres=providers.Singleton(PgJobQueue, database=database, queue=config.job_queue),
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
