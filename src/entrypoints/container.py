"""Composition root: the only module that knows every adapter."""

from __future__ import annotations

from dependency_injector import containers, providers

from adapters.filesystem import LocalSourceTree
from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemoryTaskRepo
from adapters.tokens import TiktokenCounter
from adapters.treesitter import TreeSitterChunker
from codebase_core.fusion import FusionConfig
from codebase_core.services import IndexingService, SearchService, TaskService
from entrypoints.settings import Settings


class Container(containers.DeclarativeContainer):
    """Wires ports to adapters chosen by configuration; services are built per call."""

    config = providers.Configuration()

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
    )
    task_repo = providers.Selector(
        config.store,
        memory=providers.Singleton(InMemoryTaskRepo),
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
    )
    search_service = providers.Factory(
        SearchService, store=chunk_store, embedder=embedder, fusion=fusion
    )
    task_service = providers.Factory(TaskService, repo=task_repo)


def build_container(settings: Settings | None = None) -> Container:
    """A container configured from ``settings`` (read from the environment when omitted)."""
    container = Container()
    container.config.from_pydantic(settings or Settings())
    return container
