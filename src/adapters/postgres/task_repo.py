"""PgTaskRepo: one project's development tasks in its Postgres schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import asyncpg

from codebase_mcp_search.adapters.postgres.database import PgDatabase
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.errors import TaskNotFound, ValidationFailed
from codebase_mcp_search.core.models import Task, TaskPage, TaskStatus, TaskUpdate

_COLUMNS = (
    "id, title, description, notes, status, branches, commits, planning_references, "
    "created_at, updated_at, completed_at"
)
ADD = Statement(
    """INSERT INTO {s}.tasks ({columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (id) DO NOTHING""",
    columns=_COLUMNS,
)
GET = Statement("SELECT {columns} FROM {s}.tasks WHERE id = $1", columns=_COLUMNS)
LOCK = Statement("SELECT {columns} FROM {s}.tasks WHERE id = $1 FOR UPDATE", columns=_COLUMNS)
# What an update sets, and nothing else: a field it leaves out keeps the stored value, and its
# branch or commit is appended here, unless the list holds it already.
UPDATE = Statement(
    """UPDATE {s}.tasks SET
           title = COALESCE($2, title),
           description = COALESCE($3, description),
           notes = COALESCE($4, notes),
           branches = CASE WHEN $5::text IS NULL OR $5::text = ANY(branches) THEN branches
                           ELSE array_append(branches, $5::text) END,
           commits = CASE WHEN $6::text IS NULL OR $6::text = ANY(commits) THEN commits
                          ELSE array_append(commits, $6::text) END,
           status = $7, updated_at = $8, completed_at = $9
       WHERE id = $1
       RETURNING {columns}""",
    columns=_COLUMNS,
)
_LISTED = """WHERE ($1::text IS NULL OR status = $1)
    AND ($2::text IS NULL OR branches @> ARRAY[$2::text])"""
PAGE = Statement(
    """SELECT {columns} FROM {s}.tasks {listed}
       ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4""",
    columns=_COLUMNS,
    listed=_LISTED,
)
COUNT = Statement("SELECT count(*) FROM {s}.tasks {listed}", listed=_LISTED)


def _task(row: asyncpg.Record) -> Task:
    return Task(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        notes=row["notes"],
        status=TaskStatus(row["status"]),
        branches=list(row["branches"]),
        commits=list(row["commits"]),
        planning_references=list(row["planning_references"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        completed_at=row["completed_at"],
    )


def _values(task: Task) -> tuple[Any, ...]:
    return (
        task.id,
        task.title,
        task.description,
        task.notes,
        task.status.value,
        list(task.branches),
        list(task.commits),
        list(task.planning_references),
        task.created_at,
        task.updated_at,
        task.completed_at,
    )


class PgTaskRepo:
    """Postgres TaskRepo: the ``tasks`` table of one project schema."""

    def __init__(self, database: PgDatabase, project_id: str) -> None:
        self._db = database
        self._project_id = project_id

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[tuple[asyncpg.Connection, str]]:
        """A pooled connection and the project's schema."""
        ws = await self._db.workspace(self._project_id)
        async with self._db.connection() as conn:
            yield conn, ws.schema

    async def add(self, task: Task) -> None:
        async with self._conn() as (conn, s):
            status = await conn.execute(ADD.at(s), *_values(task))
        if status.endswith(" 0"):
            raise ValidationFailed("id", task.id, "a task with this id already exists")

    async def get(self, task_id: str) -> Task:
        async with self._conn() as (conn, s):
            row = await conn.fetchrow(GET.at(s), task_id)
        if row is None:
            raise TaskNotFound(f"Task not found: {task_id}", task_id=task_id)
        return _task(row)

    async def update(self, task_id: str, change: TaskUpdate, now: datetime) -> Task:
        # One transaction holding the row's lock from the read to the write: concurrent updates
        # of the task take turns, and each applies the core's rules (status, completed_at,
        # updated_at) to the row as the previous one left it. Read committed is enough: a
        # locked read sees the latest committed row.
        async with self._conn() as (conn, s), conn.transaction():
            row = await conn.fetchrow(LOCK.at(s), task_id)
            if row is None:
                raise TaskNotFound(f"Task not found: {task_id}", task_id=task_id)
            after = change.applied_to(_task(row), now)
            written = await conn.fetchrow(
                UPDATE.at(s),
                task_id,
                change.title,
                change.description,
                change.notes,
                change.branch,
                change.commit,
                after.status.value,
                after.updated_at,
                after.completed_at,
            )
        return _task(written)

    async def list(
        self,
        *,
        status: TaskStatus | None = None,
        branch: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> TaskPage:
        args = (status.value if status is not None else None, branch)
        async with (
            self._conn() as (conn, s),
            # One snapshot for the page and the count, so total_count agrees with the page.
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            # Two statements, not count(*) OVER (): a window count makes Postgres read and sort
            # every matching row before the LIMIT (see bench/README.md, MCP server).
            rows = await conn.fetch(PAGE.at(s), *args, limit, offset)
            if offset == 0 and len(rows) < limit:
                total = len(rows)
            else:
                total = await conn.fetchval(COUNT.at(s), *args)
        return TaskPage(tasks=[_task(r) for r in rows], total_count=total)
