"""One source of defaults: what the product runs with (``Settings``, wired by the container) is
what a library user gets from each constructor's defaults (``core.defaults``)."""

from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.local import LocalEmbedder
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.adapters.ollama import OllamaEmbedder
from codebase_mcp_search.adapters.onnx import OnnxEmbedder
from codebase_mcp_search.adapters.openai import OpenAICompatibleEmbedder
from codebase_mcp_search.adapters.postgres import AnnConfig, PgDatabase, PgJobQueue
from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.adapters.watch import WatchfilesChangeSource
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.policies import SkipPolicy
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import IndexingService, SearchService, WorkerConfig
from codebase_mcp_search.core.services.watching import WatchConfig
from codebase_mcp_search.entrypoints import embedders
from codebase_mcp_search.entrypoints.container import build_container
from codebase_mcp_search.entrypoints.settings import Settings

# Each setting and the constructor parameters it feeds.
FED: dict[str, list[tuple[Any, str]]] = {
    "hash_dimension": [(HashingEmbedder, "dimension")],
    "pool_size": [(PgDatabase, "pool_size")],
    "connect_timeout": [(PgDatabase, "connect_timeout_s")],
    "statement_timeout": [(PgDatabase, "statement_timeout_s")],
    "pg_idle_seconds": [(PgDatabase, "idle_s")],
    "hnsw_m": [(AnnConfig, "m")],
    "hnsw_ef_construction": [(AnnConfig, "ef_construction")],
    "ollama_base_url": [(OllamaEmbedder, "base_url")],
    "ollama_embedding_model": [(OllamaEmbedder, "model")],
    "openai_base_url": [(OpenAICompatibleEmbedder, "base_url")],
    "openai_embedding_model": [(OpenAICompatibleEmbedder, "model")],
    "local_model": [(LocalEmbedder, "model")],
    "onnx_model": [(OnnxEmbedder, "model")],
    "onnx_model_dir": [(OnnxEmbedder, "model_dir")],
    "onnx_file": [(OnnxEmbedder, "graph_file")],
    "onnx_quantize": [(OnnxEmbedder, "quantize")],
    "onnx_max_tokens": [(OnnxEmbedder, "max_tokens")],
    "onnx_parallel_runs": [(OnnxEmbedder, "parallel_runs")],
    "embedding_batch_size": [
        (HttpEmbeddingOptions, "batch_size"),
        (OnnxEmbedder, "batch_size"),
        (LocalEmbedder, "batch_size"),
    ],
    "embedding_concurrency": [(HttpEmbeddingOptions, "max_in_flight")],
    "embedding_timeout": [(HttpEmbeddingOptions, "timeout_s")],
    "embedding_retries": [(HttpEmbeddingOptions, "retries")],
    "embedding_max_chars": [(HttpEmbeddingOptions, "max_input_chars")],
    "max_file_bytes": [
        (LocalSourceTree, "max_file_bytes"),
        (InMemorySourceTree, "max_file_bytes"),
        (SkipPolicy, "max_file_bytes"),
        (SkipPolicy.configured, "max_file_bytes"),
    ],
    "allow_secrets": [
        (LocalSourceTree, "allow_secrets"),
        (InMemorySourceTree, "allow_secrets"),
        (SkipPolicy, "allow_secrets"),
        (SkipPolicy.configured, "allow_secrets"),
    ],
    "chunk_max_tokens": [(TreeSitterChunker, "max_tokens")],
    "chunk_min_tokens": [(TreeSitterChunker, "min_tokens")],
    "index_batch_files": [(IndexingService, "batch_files")],
    "vector_batch_chunks": [(IndexingService, "vector_batch")],
    "fusion_method": [(FusionConfig, "method")],
    "fusion_normalisation": [(FusionConfig, "normalisation")],
    "fusion_semantic_weight": [(FusionConfig, "semantic_weight")],
    "fusion_lexical_weight": [(FusionConfig, "lexical_weight")],
    "fusion_rrf_k": [(FusionConfig, "rrf_k")],
    "ranking": [(RankingConfig, "enabled")],
    "lexical_stem_weight": [(SearchService, "stem_weight")],
    "max_concurrent_jobs": [(WorkerConfig, "max_concurrent")],
    "job_lease_seconds": [(WorkerConfig, "lease_s")],
    "job_queue": [(PgJobQueue, "queue")],
    "cache_budget_mb": [(PgDatabase, "cache_budget_mb")],
    "job_retention_days": [(WorkerConfig, "retention_days")],
    "watch_polling": [(WatchfilesChangeSource, "polling")],
    "watch_poll_ms": [(WatchfilesChangeSource, "poll_ms")],
    "watch_quiet_seconds": [(WatchConfig, "quiet_s")],
}
# Settings that no constructor has a default for: choices of the composition root, where
# things are, and secrets. (index_workers: its default is computed, checked below.)
UNFED = {
    "store",
    "embedder",
    "project",
    "data_dir",
    "database_url",
    "openai_api_key",
    "index_workers",
    "auth_token",
    "allowed_roots",
    "allowed_hosts",
    "allowed_origins",
    "job_worker",
    "pg_caches",
    "watch",
}


def constructor_default(target: Any, name: str) -> Any:
    if isinstance(target, type) and issubclass(target, BaseModel):
        return target.model_fields[name].default
    if dataclasses.is_dataclass(target):
        return {f.name: f.default for f in dataclasses.fields(target)}[name]
    return inspect.signature(target).parameters[name].default


def test_every_setting_is_checked_against_its_constructors() -> None:
    assert set(FED) | UNFED == set(Settings.model_fields)
    assert not set(FED) & UNFED


@pytest.mark.parametrize(("setting", "targets"), FED.items())
def test_a_setting_and_its_constructors_share_one_default(
    setting: str, targets: list[tuple[Any, str]]
) -> None:
    expected = Settings.model_fields[setting].default
    for target, name in targets:
        assert constructor_default(target, name) == expected, (target.__name__, name)


def test_index_workers_default_to_the_cpu_count_in_a_library_too() -> None:
    field = Settings.model_fields["index_workers"]
    assert field.default_factory is defaults.index_workers
    assert 1 <= defaults.index_workers() <= defaults.MAX_INDEX_WORKERS


def test_the_container_builds_from_settings_what_the_constructors_build_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in [v for v in os.environ if v.startswith("CODEBASE_MCP_")]:
        monkeypatch.delenv(var)
    container = build_container(Settings(store="memory", embedder="none"))
    chunker = container.chunker()
    # A chunker pickles as (class, (counter, max, min, overlap, window)).
    alone = TreeSitterChunker(TiktokenCounter())
    assert chunker.__reduce__()[1][1:] == alone.__reduce__()[1][1:]
    assert vars(container.source_tree()) == vars(LocalSourceTree())
    assert container.fusion() == FusionConfig()
    assert container.ann() == AnnConfig()
    assert embedders._options(container.config()) == HttpEmbeddingOptions()


async def test_the_postgres_caches_are_switched_off_by_one_setting(tmp_path: Path) -> None:
    from codebase_mcp_search.adapters.postgres import PgCaches

    for on, expected in ((True, PgCaches()), (False, PgCaches.off())):
        settings = Settings(
            store="postgres", database_url="postgresql://nobody@/none", pg_caches=on
        )
        container = build_container(settings.model_copy(update={"data_dir": tmp_path}))
        stores = await container.project_stores()
        try:
            assert stores.chunk_store("p").caches == expected  # type: ignore[attr-defined]
        finally:
            await stores.database.close()
