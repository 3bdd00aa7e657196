"""Configuration from the environment (prefix ``CODEBASE_MCP_``), via pydantic-settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from codebase_core.fusion import FusionMethod

MIN_TOKEN_CHARS = 16
# Where ``codebase-mcp serve --transport http|sse`` listens unless told otherwise.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("codebase-mcp", appauthor=False))


class Settings(BaseSettings):
    """Every knob, with its environment variable (see the README's configuration table)."""

    model_config = SettingsConfigDict(
        env_prefix="CODEBASE_MCP_", extra="ignore", populate_by_name=True
    )

    store: Literal["postgres", "memory"] = "postgres"
    # auto: Ollama if it answers and has the model, else the local model if the extra is
    # installed, else none (lexical search only). An explicit choice fails when unavailable.
    embedder: Literal["auto", "ollama", "openai", "local", "hash", "none"] = "auto"
    hash_dimension: int = Field(default=384, ge=8, le=4096)
    project: str = "default"
    data_dir: Path = Field(default_factory=_default_data_dir)

    # Unset: the embedded PostgreSQL (pgserver) in data_dir/postgres.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CODEBASE_MCP_DATABASE_URL", "DATABASE_URL")
    )
    pool_size: int = Field(default=8, ge=2, le=100)
    connect_timeout: float = Field(default=10.0, gt=0)
    statement_timeout: float = Field(default=120.0, gt=0)
    hnsw_m: int = Field(default=10, ge=4, le=100)
    hnsw_ef_construction: int = Field(default=40, ge=8, le=1000)
    ollama_base_url: str = Field(
        default="http://localhost:11434",
        validation_alias=AliasChoices("CODEBASE_MCP_OLLAMA_BASE_URL", "OLLAMA_BASE_URL"),
    )
    ollama_embedding_model: str = Field(
        default="nomic-embed-text",
        validation_alias=AliasChoices(
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL", "OLLAMA_EMBEDDING_MODEL"
        ),
    )

    openai_base_url: str = Field(
        default="https://api.openai.com/v1",
        validation_alias=AliasChoices("CODEBASE_MCP_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
    )
    # The model of the OpenAI-compatible server.
    embedding_model: str = "text-embedding-3-small"
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("CODEBASE_MCP_OPENAI_API_KEY", "OPENAI_API_KEY"),
    )
    local_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    # Texts per request (HTTP) or per forward pass (local).
    embedding_batch_size: int = Field(default=32, ge=1, le=2048)
    # HTTP requests in flight at once.
    embedding_concurrency: int = Field(default=2, ge=1, le=64)
    embedding_timeout: float = Field(default=120.0, gt=0)
    embedding_retries: int = Field(default=4, ge=0, le=20)
    # Texts longer than this many characters are cut before they are sent (HTTP embedders;
    # unset: 6,000 for Ollama, 24,000 for OpenAI-compatible servers).
    embedding_max_chars: int | None = Field(default=None, ge=16)

    max_file_bytes: int = Field(default=1_048_576, ge=1)
    allow_secrets: bool = False
    chunk_max_tokens: int = Field(default=512, ge=32)
    # Tiny neighbouring definitions merge up to this many tokens. 0: every function is its
    # own chunk, which embeds better (CoSQA semantic MRR@10 0.500 -> 0.534 with MiniLM).
    chunk_min_tokens: int = Field(default=0, ge=0)
    index_batch_files: int = Field(default=64, ge=1)
    # Processes chunking a large change set (1: a thread of this process). Unset: 1 in a
    # library process (spawned workers import its main module, see the README), the CPU
    # count (at most 8) in the CLI (see ``cli_index_workers``).
    index_workers: int | None = Field(default=None, ge=1, le=64)

    # Tuned with all-MiniLM-L6-v2 on CoSQA and the own eval (bench/tune_fusion.py, README).
    fusion_method: FusionMethod = "linear"
    fusion_normalisation: Literal["none", "minmax"] = "minmax"
    fusion_semantic_weight: float = Field(default=1.0, ge=0.0)
    fusion_lexical_weight: float = Field(default=0.5, ge=0.0)
    fusion_rrf_k: int = Field(default=60, ge=1)

    # The MCP server. A bearer token that HTTP/SSE clients must send (required to bind to a
    # non-loopback address), and the directories index_repository may index (None: any;
    # required off loopback), separated by os.pathsep like PATH.
    auth_token: SecretStr | None = None
    allowed_roots: Annotated[list[str] | None, NoDecode] = None

    @field_validator("auth_token")
    @classmethod
    def _real_token(cls, value: SecretStr | None) -> SecretStr | None:
        # An empty token would otherwise read as "no token" and leave a public server open.
        if value is not None and len(value.get_secret_value().strip()) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"must be at least {MIN_TOKEN_CHARS} characters (e.g. the output of "
                "'python -c \"import secrets; print(secrets.token_urlsafe(32))\"'), or unset"
            )
        return value

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            roots = [r.strip() for r in value.split(os.pathsep) if r.strip()]
            return roots or None
        return value

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, value: list[str] | None) -> list[str] | None:
        for root in value or []:
            if not os.path.isabs(os.path.expanduser(root)):
                raise ValueError(f"{root!r} is not an absolute path")
        return [os.path.expanduser(r) for r in value] if value else None


def cli_index_workers() -> int:
    """Chunking processes for our own entry points, whose main modules are import-safe."""
    return min(os.cpu_count() or 1, 8)
