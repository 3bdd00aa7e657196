"""Composition root: the only module that knows every adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from dependency_injector import containers, providers

from adapters.filesystem import LocalSourceTree
from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemoryTaskRepo
from adapters.postgres import AnnConfig, PgChunkStore, PgDatabase, PgTaskRepo
from adapters.tokens import TiktokenCounter
from adapters.treesitter import TreeSitterChunker
from codebase_core.fusion import FusionConfig
from codebase_core.services import IndexingService, SearchService, TaskService
from entrypoints.settings import Settings


async def postgres_database(
    url: str | None,
    data_dir: Path,
    pool_size: int,
    connect_timeout: float,
    statement_timeout: float,
) -> AsyncIterator[PgDatabase]:
    """The process's Postgres pool (embedded server when ``url`` is None); opens lazily."""
    database = PgDatabase(
        url,
        data_dir=Path(data_dir),
        pool_size=pool_size,
        connect_timeout_s=connect_timeout,
        statement_timeout_s=statement_timeout,
    )
    try:
        yield database
    finally:
        await database.close()


class Container(containers.DeclarativeContainer):
    """Wires ports to adapters chosen by configuration; services are built per call.

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
    chunk_store = providers.Selector(
        config.store,
        memory=providers.Singleton(InMemoryChunkStore),
        postgres=providers.Singleton(
            PgChunkStore, database=database, project_id=config.project, ann=ann
        ),
    )
    task_repo = providers.Selector(
        config.store,
        memory=providers.Singleton(InMemoryTaskRepo),
        postgres=providers.Singleton(PgTaskRepo, database=database, project_id=config.project),
    )
    embedder = providers.Selector(
        config.embedder,
        none=providers.Object(None),
        hash=providers.Singleton(HashingEmbedder, dimension=config.hash_dimension),
    )
    fusion = providers.Singleton(
        FusionConfig,
        method=config.fusion_method,
        semantic_weight=config.fusion_semantic_weight,
        lexical_weight=config.fusion_lexical_weight,
        rrf_k=config.fusion_rrf_k,
    )

    indexing_service = providers.Factory(
        IndexingService,
        store=chunk_store,
        source=source_tree,
        chunker=chunker,
        tokens=token_counter,
        embedder=embedder,
        batch_files=config.index_batch_files,
        workers=providers.Callable(lambda n: n or 1, config.index_workers),
    )
    search_service = providers.Factory(
        SearchService, store=chunk_store, embedder=embedder, fusion=fusion
    )
    task_service = providers.Factory(TaskService, repo=task_repo)


def build_container(settings: Settings | None = None) -> Container:
    """A container configured from ``settings`` (read from the environment when omitted)."""
    container = Container()
    container.config.from_pydantic(settings or Settings())
    for provider in (
        container.chunk_store,
        container.task_repo,
        container.embedder,
        container.indexing_service,
        container.search_service,
        container.task_service,
    ):
        provider.enable_async_mode()
    return container
