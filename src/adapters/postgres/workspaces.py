"""Project workspaces as the database holds them: the global ``projects`` table, each project's
schema migrated to the current version, listed, measured and dropped (``PgDatabase`` runs
these on its pool, under the migration lock)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import asyncpg

from codebase_mcp_search.adapters.postgres.schema import (
    CHANGES_CHANNEL,
    GLOBAL_SCHEMA,
    MIGRATIONS,
    SCHEMA_VERSION,
)
from codebase_mcp_search.adapters.postgres.sql import Statement, quote_ident

# pg_advisory_xact_lock key guarding CREATE EXTENSION / schema creation / migrations.
MIGRATION_LOCK: Final = 0x636F_6465_6261_7365  # "codebase"
LOCK_MIGRATIONS: Final = "SELECT pg_advisory_xact_lock($1)"

ADD_PROJECT = Statement(
    "INSERT INTO {s}.projects (id, schema_name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING"
).at(GLOBAL_SCHEMA)
PROJECT_VERSION = Statement("SELECT schema_version FROM {s}.projects WHERE id = $1").at(
    GLOBAL_SCHEMA
)
# A step may rewrite a large table (postings into blocks): no statement timeout, and room to
# sort and build indexes, for the migration's transaction only.
MIGRATION_SETTINGS: Final = (
    "SET LOCAL statement_timeout = 0",
    "SET LOCAL maintenance_work_mem = '256MB'",
)
RECORD_STEP = Statement("INSERT INTO {s}.schema_migrations (version) VALUES ($1)")
SET_PROJECT_VERSION = Statement("UPDATE {s}.projects SET schema_version = $2 WHERE id = $1").at(
    GLOBAL_SCHEMA
)
PROJECTS = Statement("SELECT id, schema_name FROM {s}.projects ORDER BY id").at(GLOBAL_SCHEMA)
SIZES = Statement(
    """SELECT p.id, coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS size
       FROM {s}.projects p
       LEFT JOIN pg_namespace n ON n.nspname = p.schema_name
       LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind = 'r'
       GROUP BY p.id"""
).at(GLOBAL_SCHEMA)
DROP_SCHEMA = Statement("DROP SCHEMA IF EXISTS {s} CASCADE")
DELETE_PROJECT = Statement("DELETE FROM {s}.projects WHERE id = $1").at(GLOBAL_SCHEMA)
NOTIFY_CHANGE: Final = "SELECT pg_notify($1, $2)"


@dataclass(frozen=True, slots=True)
class Workspace:
    """A project's schema: the id, the schema name and its quoted form."""

    project_id: str
    schema: str

    @property
    def quoted(self) -> str:
        return quote_ident(self.schema)


async def migrate(conn: asyncpg.Connection, project_id: str, schema: str) -> None:
    """Record the project and bring its schema to ``SCHEMA_VERSION``, in one transaction."""
    async with conn.transaction():
        await conn.execute(LOCK_MIGRATIONS, MIGRATION_LOCK)
        await conn.execute(ADD_PROJECT, project_id, schema)
        version: int = await conn.fetchval(PROJECT_VERSION, project_id)
        if version < SCHEMA_VERSION:
            for setting in MIGRATION_SETTINGS:
                await conn.execute(setting)
        for step, statement in MIGRATIONS:
            if step <= version:
                continue
            await conn.execute(statement.at(schema))
            await conn.execute(RECORD_STEP.at(schema), step)
            await conn.execute(SET_PROJECT_VERSION, project_id, step)


async def projects(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    """Every known project as (id, schema name), by id."""
    return [(r["id"], r["schema_name"]) for r in await conn.fetch(PROJECTS)]


async def sizes(conn: asyncpg.Connection) -> dict[str, int]:
    """Bytes on disk of each project's schema (tables with their indexes and TOAST)."""
    return {r["id"]: r["size"] for r in await conn.fetch(SIZES)}


async def drop(conn: asyncpg.Connection, project_id: str, schema: str) -> None:
    """Remove a project's schema and everything in it, and tell every process (its
    ``ChangeFeed``) that what it kept of the project is gone."""
    async with conn.transaction():
        await conn.execute(LOCK_MIGRATIONS, MIGRATION_LOCK)
        await conn.execute(DROP_SCHEMA.at(schema))
        await conn.execute(DELETE_PROJECT, project_id)
        await conn.execute(NOTIFY_CHANGE, CHANGES_CHANNEL, schema)
