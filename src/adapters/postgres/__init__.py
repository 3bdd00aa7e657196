"""Postgres + pgvector adapters: chunk store, task repository, job queue, embedded server, workspaces."""

from adapters.postgres.ann import AnnConfig
from adapters.postgres.chunk_store import PgChunkStore
from adapters.postgres.database import PgDatabase
from adapters.postgres.job_queue import PgJobQueue
from adapters.postgres.schema import schema_name
from adapters.postgres.task_repo import PgTaskRepo

__all__ = ["AnnConfig", "PgChunkStore", "PgDatabase", "PgJobQueue", "PgTaskRepo", "schema_name"]
