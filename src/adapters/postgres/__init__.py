"""Postgres + pgvector adapters: chunk store, task repository, job queue, embedded server, workspaces."""

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
