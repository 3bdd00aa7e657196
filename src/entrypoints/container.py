"""Composition root: the only module that knows every adapter."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from dependency_injector import containers, providers

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
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
    AnnConfig,
    PgChunkStore,
    PgDatabase,
    PgJobQueue,
    PgTaskRepo,
    schema_name,
)
from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions, redact_url
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.adapters.workers import ProcessChunkingPool
from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import check_project_id
from codebase_mcp_search.core.ports import ChunkStore, Embedder, TaskRepo
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import (
    IndexingService,
    JobService,
    SearchService,
    TaskService,
)
from codebase_mcp_search.entrypoints.settings import Settings


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


log = logging.getLogger("codebase_mcp")


class ProjectStores:
    """Each project's chunk store and task repository, created on first use and kept for the
    life of the process (a server answers for many projects). ``database`` None: memory."""

    def __init__(self, database: PgDatabase | None, ann: AnnConfig) -> None:
        self._database = database
        self._ann = ann
        self._stores: dict[str, ChunkStore] = {}
        self._repos: dict[str, TaskRepo] = {}

    @property
    def database(self) -> PgDatabase | None:
        """The Postgres database (None for the memory store)."""
        return self._database

    def database_name(self, project_id: str) -> str | None:
        """The Postgres schema of a project (None for the memory store)."""
        return schema_name(project_id) if self._database is not None else None

    def chunk_store(self, project_id: str) -> ChunkStore:
        pid = check_project_id(project_id)
        store = self._stores.get(pid)
        if store is None:
            db = self._database
            store = InMemoryChunkStore() if db is None else PgChunkStore(db, pid, ann=self._ann)
            self._stores[pid] = store
        return store

    def task_repo(self, project_id: str) -> TaskRepo:
        pid = check_project_id(project_id)
        repo = self._repos.get(pid)
        if repo is None:
            db = self._database
            repo = InMemoryTaskRepo() if db is None else PgTaskRepo(db, pid)
            self._repos[pid] = repo
        return repo

    async def project_ids(self) -> list[str]:
        """Every project: those in the database, or those used by this process (memory)."""
        if self._database is None:
            return sorted(set(self._stores) | set(self._repos))
        return [pid for pid, _ in await self._database.projects()]

    async def sizes(self) -> dict[str, int]:
        """Bytes on disk per project (empty for the memory store)."""
        if self._database is None:
            return {}
        return await self._database.workspace_sizes()


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """The embedder in use (None: lexical search only), what was asked for and why."""

    embedder: Embedder | None
    requested: str
    chosen: str
    reason: str


async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    """The process's one HTTP client (timeouts are set per request by the embedders)."""
    async with httpx.AsyncClient(follow_redirects=True) as client:
        yield client


def _options(config: Mapping[str, Any]) -> HttpEmbeddingOptions:
    """(``max_input_chars`` None: the embedder's own default for its server kind.)"""
    return HttpEmbeddingOptions(
        batch_size=config["embedding_batch_size"],
        max_in_flight=config["embedding_concurrency"],
        timeout_s=config["embedding_timeout"],
        retries=config["embedding_retries"],
        max_input_chars=config["embedding_max_chars"],
    )


def _ollama(config: Mapping[str, Any], client: httpx.AsyncClient) -> OllamaEmbedder:
    return OllamaEmbedder(
        client,
        config["ollama_base_url"],
        config["ollama_embedding_model"],
        _options(config),
    )


def _openai(config: Mapping[str, Any], client: httpx.AsyncClient) -> OpenAICompatibleEmbedder:
    key = config["openai_api_key"]
    return OpenAICompatibleEmbedder(
        client,
        config["openai_base_url"],
        config["openai_embedding_model"],
        key.get_secret_value() if key is not None else None,
        _options(config),
    )


def _onnx(config: Mapping[str, Any], client: httpx.AsyncClient) -> OnnxEmbedder:
    """(``client`` unused: the signature of every entry of ``_OPENED``.)"""
    return OnnxEmbedder(
        config["onnx_model"],
        model_dir=config["onnx_model_dir"],
        graph_file=config["onnx_file"],
        quantize=config["onnx_quantize"],
        cache_dir=Path(config["data_dir"]) / "models",
        batch_size=config["embedding_batch_size"],
    )


def _local(config: Mapping[str, Any], client: httpx.AsyncClient) -> LocalEmbedder:
    """(``client`` unused: the signature of every entry of ``_OPENED``.)"""
    return LocalEmbedder(config["local_model"], batch_size=config["embedding_batch_size"])


# The embedders that must be opened (a server asked, a model loaded) before use.
_OPENED: dict[
    str,
    Callable[
        [Mapping[str, Any], httpx.AsyncClient],
        OllamaEmbedder | OpenAICompatibleEmbedder | OnnxEmbedder | LocalEmbedder,
    ],
] = {"ollama": _ollama, "openai": _openai, "onnx": _onnx, "local": _local}


async def choose_embedder(config: Mapping[str, Any], client: httpx.AsyncClient) -> EmbedderChoice:
    """The configured embedder, opened (dimension known). ``auto`` tries Ollama, then the ONNX
    model, then the local model, then settles for none; an explicit choice raises
    ``EmbedderUnavailable``."""
    requested = config["embedder"]
    if requested == "none":
        return EmbedderChoice(None, requested, "none", "CODEBASE_MCP_EMBEDDER=none")
    if requested == "hash":
        hashing = HashingEmbedder(dimension=config["hash_dimension"])
        return EmbedderChoice(hashing, requested, "hash", "CODEBASE_MCP_EMBEDDER=hash")
    if requested != "auto":
        explicit = _OPENED[requested](config, client)
        await explicit.open()
        return EmbedderChoice(explicit, requested, requested, f"CODEBASE_MCP_EMBEDDER={requested}")
    server = _ollama(config, client)
    found, why_not_ollama = await server.has_model()
    if found:
        try:
            await server.open()
            return EmbedderChoice(server, requested, "ollama", why_not_ollama)
        except EmbedderUnavailable as e:
            why_not_ollama = e.message
    onnx = _onnx(config, client)
    try:
        await onnx.open()
        return EmbedderChoice(onnx, requested, "onnx", f"{why_not_ollama}; the ONNX model loaded")
    except EmbedderUnavailable as e:
        why_not = f"{why_not_ollama}; {e.message}"
    if not local_extra_installed():
        reason = f"{why_not}; the local extra is not installed: lexical search only"
        return EmbedderChoice(None, requested, "none", reason)
    local = _local(config, client)
    try:
        await local.open()
    except EmbedderUnavailable as e:
        return EmbedderChoice(None, requested, "none", f"{why_not}; {e.message}")
    return EmbedderChoice(local, requested, "local", f"{why_not}; the local extra is installed")


async def embedder_choice(
    config: Mapping[str, Any], client: httpx.AsyncClient
) -> AsyncIterator[EmbedderChoice]:
    """``choose_embedder`` as a container resource: chosen once per process, and logged."""
    choice = await choose_embedder(config, client)
    model = (
        f"{choice.embedder.model} ({choice.embedder.dimension} dimensions)"
        if choice.embedder
        else "lexical search only"
    )
    # An automatic choice is news worth a line; an explicit one is what the user asked for.
    level = logging.INFO if choice.requested == "auto" else logging.DEBUG
    log.log(level, "embedder: %s, %s [%s]", choice.chosen, model, redact_url(choice.reason))
    yield choice


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
    project_stores = providers.Singleton(
        ProjectStores,
        database=providers.Selector(config.store, memory=providers.Object(None), postgres=database),
        ann=ann,
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

    indexing_service = providers.Factory(
        IndexingService,
        store=chunk_store,
        source=source_tree,
        chunker=chunker,
        tokens=token_counter,
        embedder=embedder,
        batch_files=config.index_batch_files,
        workers=config.index_workers,
        chunking_pool=providers.Singleton(ProcessChunkingPool),
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
    # One queue for every project of the store: workers claim jobs of any project.
    job_queue = providers.Selector(
        config.store,
        memory=providers.Singleton(InMemoryJobQueue),
        postgres=providers.Singleton(PgJobQueue, database=database, queue=config.job_queue),
    )
    job_service = providers.Factory(JobService, queue=job_queue)


def build_container(settings: Settings | None = None) -> Container:
    """A container configured from ``settings`` (read from the environment when omitted)."""
    container = Container()
    container.config.from_pydantic(settings or Settings())
    for provider in (
        container.project_stores,
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
