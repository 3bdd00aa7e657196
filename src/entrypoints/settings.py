"""Configuration from the environment (prefix ``CODEBASE_MCP_``), via pydantic-settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.fusion import FusionMethod, FusionNormalisation

MIN_TOKEN_CHARS = 16
# Where ``codebase-mcp serve --transport http|sse`` listens unless told otherwise.
DEFAULT_HOST = defaults.DEFAULT_HOST
DEFAULT_PORT = defaults.DEFAULT_PORT


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("codebase-mcp", appauthor=False))


class Settings(BaseSettings):
    """Every knob, with its environment variable (see docs/configuration.md).

    Defaults come from ``core.defaults``, as do those of the constructors the
    container calls with these values, so a library user building an adapter by hand gets
    what the product runs with.
    """

    model_config = SettingsConfigDict(
        env_prefix="CODEBASE_MCP_", extra="ignore", populate_by_name=True
    )

    store: Literal["postgres", "memory"] = "postgres"
    # auto: Ollama if it answers and has the model, else the ONNX model (built in), else the
    # local model if the extra is installed, else none (lexical search only). An explicit
    # choice fails when unavailable.
    embedder: Literal["auto", "ollama", "onnx", "openai", "local", "hash", "none"] = "auto"
    hash_dimension: int = Field(default=defaults.HASH_DIMENSION, ge=8, le=4096)
    project: str = "default"
    data_dir: Path = Field(default_factory=_default_data_dir)

    # Unset: the embedded PostgreSQL (pgserver) in data_dir/postgres.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CODEBASE_MCP_DATABASE_URL", "DATABASE_URL")
    )
    pool_size: int = Field(default=defaults.POOL_SIZE, ge=2, le=100)
    connect_timeout: float = Field(default=defaults.CONNECT_TIMEOUT_S, gt=0)
    statement_timeout: float = Field(default=defaults.STATEMENT_TIMEOUT_S, gt=0)
    # Seconds the embedded server stays up after the last process using it exits (0: it stops
    # with that process); a watcher process stops it then (adapters.postgres.linger).
    pg_idle_seconds: float = Field(default=defaults.PG_IDLE_S, ge=0)
    # What each Postgres store keeps in this process (chunk texts, postings, a small project's
    # vectors, filter matches, the repository list), each within its budget; false: none,
    # every search reads the database (adapters.postgres.PgCaches). The CLI's commands but
    # serve and worker run once and exit: they keep none whatever this says.
    pg_caches: bool = True
    # MiB the caches of every project together may hold in the process (least recently used
    # out first, across projects; adapters.postgres.cache_ledger). 0: nothing is kept.
    cache_budget_mb: int = Field(default=defaults.CACHE_BUDGET_MB, ge=0, le=1_048_576)
    hnsw_m: int = Field(default=defaults.ANN_M, ge=4, le=100)
    hnsw_ef_construction: int = Field(default=defaults.ANN_EF_CONSTRUCTION, ge=8, le=1000)
    ollama_base_url: str = Field(
        default=defaults.OLLAMA_BASE_URL,
        validation_alias=AliasChoices("CODEBASE_MCP_OLLAMA_BASE_URL", "OLLAMA_BASE_URL"),
    )
    ollama_embedding_model: str = Field(
        default=defaults.OLLAMA_MODEL,
        validation_alias=AliasChoices(
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL", "OLLAMA_EMBEDDING_MODEL"
        ),
    )

    openai_base_url: str = Field(
        default=defaults.OPENAI_BASE_URL,
        validation_alias=AliasChoices("CODEBASE_MCP_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
    )
    # The model of the OpenAI-compatible server (the other embedders have their own setting).
    # Its old name ``embedding_model`` still works, as a keyword (see ``_old_names``) and as
    # CODEBASE_MCP_EMBEDDING_MODEL.
    openai_embedding_model: str = Field(
        default=defaults.OPENAI_MODEL,
        validation_alias=AliasChoices(
            "CODEBASE_MCP_OPENAI_EMBEDDING_MODEL", "CODEBASE_MCP_EMBEDDING_MODEL"
        ),
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("CODEBASE_MCP_OPENAI_API_KEY", "OPENAI_API_KEY"),
    )
    local_model: str = defaults.LOCAL_MODEL
    # The ONNX embedder: a hub repository with an ONNX graph (the default model is built in),
    # or a local model folder (wins when set), the graph's path inside either (unset:
    # model.onnx or onnx/model.onnx), and whether to run an int8 graph derived from it
    # (cached in data_dir/models).
    onnx_model: str = defaults.ONNX_MODEL
    onnx_model_dir: Path | None = None
    onnx_file: str | None = None
    onnx_quantize: bool = defaults.ONNX_QUANTIZE
    # Tokens of a chunk the ONNX model embeds, capped by the model's own (unset: the model's).
    onnx_max_tokens: int | None = Field(default=defaults.ONNX_MAX_TOKENS, ge=8)
    # Texts the ONNX model runs at once (unset: one per core).
    onnx_parallel_runs: int | None = Field(default=defaults.ONNX_PARALLEL_RUNS, ge=1, le=64)
    # Texts per request (HTTP) or per forward pass (onnx, local).
    embedding_batch_size: int = Field(default=defaults.EMBEDDING_BATCH_SIZE, ge=1, le=2048)
    # HTTP requests in flight at once.
    embedding_concurrency: int = Field(default=defaults.EMBEDDING_CONCURRENCY, ge=1, le=64)
    embedding_timeout: float = Field(default=defaults.EMBEDDING_TIMEOUT_S, gt=0)
    embedding_retries: int = Field(default=defaults.EMBEDDING_RETRIES, ge=0, le=20)
    # Texts longer than this many characters are cut before they are sent (HTTP embedders;
    # unset: what the server kind takes, ``DEFAULT_MAX_INPUT_CHARS`` of each HTTP embedder).
    embedding_max_chars: int | None = Field(default=None, ge=16)

    max_file_bytes: int = Field(default=defaults.MAX_FILE_BYTES, ge=1)
    allow_secrets: bool = defaults.ALLOW_SECRETS
    chunk_max_tokens: int = Field(default=defaults.CHUNK_MAX_TOKENS, ge=32)
    # Tiny neighbouring definitions merge up to this many tokens (0: every definition is its
    # own chunk, which embeds better; figures in bench/README.md).
    chunk_min_tokens: int = Field(default=defaults.CHUNK_MIN_TOKENS, ge=0)
    index_batch_files: int = Field(default=defaults.INDEX_BATCH_FILES, ge=1)
    # Chunks embedded, then stored in one step, per batch of the semantic layer: an
    # interrupted run loses at most one batch.
    vector_batch_chunks: int = Field(default=defaults.VECTOR_BATCH_CHUNKS, ge=1, le=100_000)
    # Processes chunking a change set of 1,000 or more files (1: a thread of this process).
    # Workers are spawned with a blank __main__, so they never import the caller's main
    # module: a library process gets the CLI's default too.
    index_workers: int = Field(default_factory=defaults.index_workers, ge=1, le=64)

    # Tuned with all-MiniLM-L6-v2 on CoSQA and the own eval (bench/tune_fusion.py, bench/README.md).
    fusion_method: FusionMethod = defaults.FUSION_METHOD
    fusion_normalisation: FusionNormalisation = defaults.FUSION_NORMALISATION
    fusion_semantic_weight: float = Field(default=defaults.FUSION_SEMANTIC_WEIGHT, ge=0.0)
    fusion_lexical_weight: float = Field(default=defaults.FUSION_LEXICAL_WEIGHT, ge=0.0)
    fusion_rrf_k: int = Field(default=defaults.FUSION_RRF_K, ge=1)
    # The ranking stack (core.ranking: definitions first, paths, priors against tests
    # and docs, one chunk per file before a decay); false: results in retrieval order.
    ranking: bool = True
    # Lexical mode: the weight of each query word's other forms (core.stems); 0: none.
    lexical_stem_weight: float = Field(default=defaults.LEXICAL_STEM_WEIGHT, ge=0.0, le=10.0)
    # Background indexing jobs: how many one worker runs at once, whether the MCP server runs
    # a worker in its own process (false when dedicated `codebase-mcp worker`s share the
    # database), how long a dead worker's job waits before another takes it over, and how
    # long finished jobs are kept.
    max_concurrent_jobs: int = Field(default=defaults.MAX_CONCURRENT_JOBS, ge=1, le=64)
    job_worker: bool = True
    # Workers take only the jobs of their queue (several pools on one database, e.g. machines
    # with and without a GPU; a test suite keeps its jobs apart).
    job_queue: str = Field(default="default", min_length=1, max_length=64)
    job_lease_seconds: float = Field(default=defaults.JOB_LEASE_S, ge=2.0, le=3600.0)
    job_retention_days: float = Field(default=defaults.JOB_RETENTION_DAYS, gt=0, le=3650)

    # Watching (``serve``, ``codebase-mcp worker``): each repository's changes are indexed by
    # an incremental job within seconds. ``watch_polling``: rescan every ``watch_poll_ms``
    # rather than take the file system's events (a network mount not recognised as one).
    watch: bool = defaults.WATCH
    watch_polling: bool = defaults.WATCH_POLLING
    watch_poll_ms: int = Field(default=defaults.WATCH_POLL_MS, ge=100, le=600_000)
    # Seconds a repository stays quiet before its changes are indexed (a burst is one job).
    watch_quiet_seconds: float = Field(default=defaults.WATCH_QUIET_S, ge=0.05, le=60.0)

    # The MCP server. A bearer token that HTTP/SSE clients must send (required to bind to a
    # non-loopback address), and the directories index_repository may index (None: any;
    # required off loopback), separated by os.pathsep like PATH.
    auth_token: SecretStr | None = None
    allowed_roots: Annotated[list[str] | None, NoDecode] = None
    # Host names (and browser origins) an HTTP/SSE server answers besides loopback's, comma
    # separated: a server without a token refuses any other, against DNS rebinding.
    allowed_hosts: Annotated[list[str] | None, NoDecode] = None
    allowed_origins: Annotated[list[str] | None, NoDecode] = None

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        # Settings(embedding_model=...), the field's old name. Not an alias: pydantic-settings
        # would then also read an unprefixed EMBEDDING_MODEL from the environment. A keyword
        # beats the environment, as any keyword does; the new name beats the old.
        if isinstance(data, dict) and "embedding_model" in data:
            data = dict(data)
            old = data.pop("embedding_model")
            if "openai_embedding_model" not in data:
                for env in ("CODEBASE_MCP_OPENAI_EMBEDDING_MODEL", "CODEBASE_MCP_EMBEDDING_MODEL"):
                    data.pop(env, None)
                data["openai_embedding_model"] = old
        return data

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

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        if isinstance(value, str):
            names = [n.strip() for n in value.split(",") if n.strip()]
            return names or None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _bare_hosts(cls, value: list[str] | None) -> list[str] | None:
        for host in value or []:
            if "/" in host or " " in host:
                raise ValueError(
                    f"{host!r} is not a host name: give names such as 'dev.example.com' or "
                    "'dev.example.com:8080', comma separated (origins go in "
                    "CODEBASE_MCP_ALLOWED_ORIGINS)"
                )
        return [h.lower() for h in value] if value else None

    @field_validator("allowed_origins")
    @classmethod
    def _real_origins(cls, value: list[str] | None) -> list[str] | None:
        value = [o.rstrip("/") for o in value] if value else None
        for origin in value or []:
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
                raise ValueError(
                    f"{origin!r} is not an origin: give scheme, host and port, such as "
                    "'https://dev.example.com' or 'http://localhost:5173', comma separated"
                )
        return [o.lower() for o in value] if value else None

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, value: list[str] | None) -> list[str] | None:
        for root in value or []:
            if not os.path.isabs(os.path.expanduser(root)):
                raise ValueError(f"{root!r} is not an absolute path")
        return [os.path.expanduser(r) for r in value] if value else None


# The older name of the ``index_workers`` default (the benches call it).
cli_index_workers = defaults.index_workers
