"""The objects every project of a database shares: the projects registry and the one jobs
table all workers claim from. Made on each pool's first connection, under the migration
lock; every statement is idempotent, so a database made by an older version gains what was
added since."""

from __future__ import annotations

from codebase_mcp_search.adapters.postgres.schema import GLOBAL_SCHEMA
from codebase_mcp_search.adapters.postgres.sql import Statement

GLOBAL_SQL = Statement("""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.projects (
    id text PRIMARY KEY,
    schema_name text NOT NULL UNIQUE,
    schema_version int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Background indexing jobs of every project: one queue that all workers share.
CREATE TABLE IF NOT EXISTS {s}.jobs (
    id uuid PRIMARY KEY,
    queue text NOT NULL,
    project_id text NOT NULL,
    repo_path text NOT NULL,
    repo_name text NOT NULL,
    force_reindex bool NOT NULL,
    kind text NOT NULL DEFAULT 'lexical',
    status text NOT NULL,
    cancel_requested bool NOT NULL DEFAULT false,
    progress_percentage int NOT NULL DEFAULT 0,
    progress_message text NOT NULL,
    files_scanned int NOT NULL DEFAULT 0,
    files_indexed int NOT NULL DEFAULT 0,
    chunks_created int NOT NULL DEFAULT 0,
    eta_seconds double precision,
    error_message text,
    error_type text,
    result jsonb,
    worker_id text,
    lease_expires_at timestamptz,
    attempts int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    started_at timestamptz,
    completed_at timestamptz,
    cancelled_at timestamptz
);
-- Which layer a job builds (a table made before the two layers has no column yet).
ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'lexical';
-- A semantic job's counts, so that a worker resuming it goes on from them (added later too).
ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS vectors_stored int NOT NULL DEFAULT 0;
ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS chunks_embedded int NOT NULL DEFAULT 0;
-- One active job of each kind per repository of a project; a second submit fails on this
-- index (it replaces jobs_active, of one active job per repository whatever its kind).
DROP INDEX IF EXISTS {s}.jobs_active;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_active_of_kind
    ON {s}.jobs (queue, project_id, repo_path, kind)
    WHERE status IN ('pending', 'running', 'blocked');
CREATE INDEX IF NOT EXISTS jobs_claimable ON {s}.jobs (queue, created_at, id)
    WHERE status IN ('pending', 'running', 'blocked');
CREATE INDEX IF NOT EXISTS jobs_newest ON {s}.jobs (queue, created_at DESC, id DESC);
""").at(GLOBAL_SCHEMA)
