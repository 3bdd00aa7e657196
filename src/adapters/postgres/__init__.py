"""Postgres + pgvector adapters: chunk store, task repository, job queue, embedded server, workspaces.

Each name is imported from its module when first asked for: a process that only reads (a
lexical search from the CLI) never loads the job queue, nor the package's other modules."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codebase_mcp_search.adapters.postgres.ann import AnnConfig
    from codebase_mcp_search.adapters.postgres.chunk_store import PgCaches, PgChunkStore
    from codebase_mcp_search.adapters.postgres.database import PgDatabase
    from codebase_mcp_search.adapters.postgres.job_queue import PgJobQueue
    from codebase_mcp_search.adapters.postgres.schema import schema_name
    from codebase_mcp_search.adapters.postgres.task_repo import PgTaskRepo
    from codebase_mcp_search.adapters.postgres.watch_claims import PgWatchClaims

__all__ = [
    "AnnConfig",
    "PgCaches",
    "PgChunkStore",
    "PgDatabase",
    "PgJobQueue",
    "PgTaskRepo",
    "PgWatchClaims",
    "schema_name",
]

_MODULES = {
    "AnnConfig": "ann",
    "PgCaches": "chunk_store",
    "PgChunkStore": "chunk_store",
    "PgDatabase": "database",
    "PgJobQueue": "job_queue",
    "PgTaskRepo": "task_repo",
    "PgWatchClaims": "watch_claims",
    "schema_name": "schema",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    globals()[name] = value
    return value
