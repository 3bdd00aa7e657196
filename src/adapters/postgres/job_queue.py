"""PgJobQueue: the background jobs of every project in one table that all workers share."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

import asyncpg

from codebase_mcp_search.adapters.postgres.database import PgDatabase
from codebase_mcp_search.adapters.postgres.schema import GLOBAL_SCHEMA
from codebase_mcp_search.adapters.postgres.sql import Statement, part
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import (
    DEFAULT_JOB_PAGE,
    IndexResult,
    Job,
    JobKind,
    JobOutcome,
    JobPage,
    JobProgress,
    JobStatus,
    VectorResult,
    check_transition,
    steps_to,
)
from codebase_mcp_search.core.models.jobs import (
    CANCELLABLE,
    check_held,
    duplicate_job,
    job_not_found,
    not_cancellable,
)

_COLUMNS = (
    "id::text AS id, project_id, repo_path, repo_name, force_reindex, kind, status, "
    "cancel_requested, "
    "progress_percentage, progress_message, files_scanned, files_indexed, chunks_created, "
    "vectors_stored, chunks_embedded, eta_seconds, error_message, error_type, "
    "result::text AS result, worker_id, "
    "lease_expires_at, attempts, created_at, started_at, completed_at, cancelled_at"
)
_ACTIVE = "('pending', 'running', 'blocked')"
# A lease that ran out: its worker died (or lost the database) and the job may be taken over.
_EXPIRED = "(lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())"
# The columns a progress update sets from parameters $p .. $p+7 (NULL: keep); the percentage
# only grows, and the ETA is cleared once a job has ended ({ended}).
_PROGRESS = """progress_percentage = greatest(progress_percentage, coalesce(${p}, 0)),
        progress_message = coalesce(${p1}, progress_message),
        files_scanned = coalesce(${p2}, files_scanned),
        files_indexed = coalesce(${p3}, files_indexed),
        chunks_created = coalesce(${p4}, chunks_created),
        vectors_stored = coalesce(${p6}, vectors_stored),
        chunks_embedded = coalesce(${p7}, chunks_embedded),
        eta_seconds = CASE WHEN {ended} THEN NULL
            WHEN ${p1}::text IS NULL THEN eta_seconds ELSE ${p5} END"""


def _jobs(template: str, **parts: str) -> str:
    """A statement on the shared jobs table (``{columns}``: a job's columns as read)."""
    return Statement(template, **parts).at(GLOBAL_SCHEMA)


SUBMIT = _jobs(
    """INSERT INTO {s}.jobs (id, project_id, repo_path, repo_name, force_reindex, status,
           progress_message, created_at, queue, kind)
       VALUES ($1::uuid, $2, $3, $4, $5, 'pending', $6, $7, $8, $9)
       RETURNING {columns}""",
    columns=_COLUMNS,
)
ACTIVE_OF_REPOSITORY = _jobs(
    """SELECT {columns} FROM {s}.jobs WHERE project_id = $1 AND repo_path = $2
       AND status IN {active} AND queue = $3 AND kind = $4""",
    columns=_COLUMNS,
    active=_ACTIVE,
)
GET = _jobs("SELECT {columns} FROM {s}.jobs WHERE id = $1::uuid AND queue = $2", columns=_COLUMNS)
GET_LOCKED = _jobs(
    "SELECT {columns} FROM {s}.jobs WHERE id = $1::uuid AND queue = $2 FOR UPDATE",
    columns=_COLUMNS,
)
_LISTED = """WHERE queue = $3 AND ($1::text IS NULL OR status = $1)
    AND ($2::text IS NULL OR project_id = $2)"""
PAGE = _jobs(
    """SELECT {columns}, count(*) OVER () AS total FROM {s}.jobs {listed}
       ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5""",
    columns=_COLUMNS,
    listed=_LISTED,
)
COUNT = _jobs("SELECT count(*) FROM {s}.jobs {listed}", listed=_LISTED)
CLAIMABLE = _jobs(
    """SELECT id::text AS id, status, cancel_requested FROM {s}.jobs
       WHERE queue = $1 AND ($2::text[] IS NULL OR kind = ANY($2::text[]))
          AND (status = 'pending' OR (status IN ('running', 'blocked') AND {expired}))
       ORDER BY kind = 'semantic', created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED""",
    expired=_EXPIRED,
)
CLAIM = _jobs(
    """UPDATE {s}.jobs SET status = 'running', worker_id = $2,
           lease_expires_at = clock_timestamp() + make_interval(secs => $3),
           attempts = attempts + 1,
           started_at = coalesce(started_at, clock_timestamp())
       WHERE id = $1::uuid RETURNING {columns}""",
    columns=_COLUMNS,
)
CANCEL_NOW = _jobs(
    """UPDATE {s}.jobs SET status = 'cancelled', cancel_requested = true,
           cancelled_at = clock_timestamp(), completed_at = clock_timestamp(),
           lease_expires_at = NULL, eta_seconds = NULL, progress_message = 'Cancelled'
       WHERE id = $1::uuid RETURNING {columns}""",
    columns=_COLUMNS,
)
RENEW = _jobs(
    """UPDATE {s}.jobs SET
           lease_expires_at = clock_timestamp() + make_interval(secs => $2),
           {progress}
       WHERE id = $1::uuid RETURNING {columns}""",
    progress=part(
        _PROGRESS, p="3", p1="4", p2="5", p3="6", p4="7", p5="8", p6="9", p7="10", ended="false"
    ),
    columns=_COLUMNS,
)
FINISH = _jobs(
    """UPDATE {s}.jobs SET status = $2, error_message = $3, error_type = $4,
           result = coalesce($5::jsonb, result),
           lease_expires_at = CASE WHEN $6 THEN NULL ELSE lease_expires_at END,
           completed_at = CASE WHEN $6 THEN clock_timestamp() END,
           cancelled_at = CASE WHEN $2 = 'cancelled' THEN clock_timestamp() END,
           {progress}
       WHERE id = $1::uuid RETURNING {columns}""",
    progress=part(
        _PROGRESS, p="7", p1="8", p2="9", p3="10", p4="11", p5="12", p6="13", p7="14", ended="$6"
    ),
    columns=_COLUMNS,
)
TO_CANCEL = _jobs(
    """SELECT {columns}, {expired} AS expired FROM {s}.jobs
       WHERE id = $1::uuid AND queue = $2 FOR UPDATE""",
    columns=_COLUMNS,
    expired=_EXPIRED,
)
REQUEST_CANCEL = _jobs(
    "UPDATE {s}.jobs SET cancel_requested = true WHERE id = $1::uuid RETURNING {columns}",
    columns=_COLUMNS,
)
RELEASE = _jobs(
    """UPDATE {s}.jobs SET lease_expires_at = NULL
       WHERE worker_id = $1 AND status IN {active} AND queue = $2""",
    active=_ACTIVE,
)
PURGE = _jobs(
    """DELETE FROM {s}.jobs WHERE status IN ('completed', 'failed', 'cancelled')
       AND completed_at < $1 AND queue = $2"""
)


def _job(row: Mapping[str, Any]) -> Job:
    values: dict[str, Any] = dict(row)
    values.pop("total", None)
    values["status"] = JobStatus(values["status"])
    values["kind"] = kind = JobKind(values["kind"])
    raw = values.pop("result")
    if raw is not None:
        result = VectorResult if kind is JobKind.SEMANTIC else IndexResult
        values["result"] = result.model_validate_json(raw)
    return Job(**values)


def _progress_args(progress: JobProgress | None, *, complete: bool = False) -> tuple[Any, ...]:
    """Parameters of a progress update (``_PROGRESS``); ``complete`` sets the percentage to
    100."""
    if progress is None:
        return (100 if complete else None, None, None, None, None, None, None, None)
    return (
        100 if complete else progress.percentage,
        progress.message,
        progress.files_scanned,
        progress.files_indexed,
        progress.chunks_created,
        progress.eta_seconds,
        progress.vectors_stored,
        progress.chunks_embedded,
    )


class PgJobQueue:
    """Postgres JobQueue: ``codebase_mcp.jobs``, claimed with ``FOR UPDATE SKIP LOCKED``.

    ``queue`` names the queue in that table: workers and clients of one name share its jobs
    (every process of an installation uses the default; tests keep theirs apart).
    """

    def __init__(self, database: PgDatabase, queue: str = "default") -> None:
        self._db = database
        self._queue = queue

    async def submit(self, job: Job) -> Job:
        async with self._db.connection() as conn:
            try:
                row = await conn.fetchrow(
                    SUBMIT,
                    job.id,
                    job.project_id,
                    job.repo_path,
                    job.repo_name,
                    job.force_reindex,
                    job.progress_message,
                    job.created_at,
                    self._queue,
                    job.kind.value,
                )
            except asyncpg.UniqueViolationError as e:
                if e.constraint_name == "jobs_pkey":
                    raise ValidationFailed("id", job.id, "a job with this id exists") from e
                existing = await conn.fetchrow(
                    ACTIVE_OF_REPOSITORY,
                    job.project_id,
                    job.repo_path,
                    self._queue,
                    job.kind.value,
                )
                if existing is None:  # it ended in between: a retry would succeed
                    return await self.submit(job)
                raise duplicate_job(_job(existing)) from e
        assert row is not None
        return _job(row)

    async def get(self, job_id: str) -> Job:
        async with self._db.connection() as conn:
            return await self._fetch(conn, job_id)

    async def _fetch(self, conn: asyncpg.Connection, job_id: str, *, lock: bool = False) -> Job:
        """The job of this queue (``lock``: its row locked), or ``JOB_NOT_FOUND``."""
        row = await conn.fetchrow(GET_LOCKED if lock else GET, job_id, self._queue)
        if row is None:
            raise job_not_found(job_id)
        return _job(row)

    async def list(
        self,
        *,
        status: JobStatus | None = None,
        project_id: str | None = None,
        limit: int = DEFAULT_JOB_PAGE,
        offset: int = 0,
    ) -> JobPage:
        args = (status.value if status is not None else None, project_id, self._queue)
        async with self._db.connection() as conn:
            # One statement: a window count costs little over a queue's rows (purged after
            # days), and saves the round trips of a second query in a shared snapshot.
            rows = await conn.fetch(PAGE, *args, limit, offset)
            if rows:
                total = rows[0]["total"]
            else:  # past the end: the count alone
                total = await conn.fetchval(COUNT, *args)
        return JobPage(jobs=[_job(r) for r in rows], total_count=total)

    async def claim(
        self, worker_id: str, lease_s: float, kinds: Collection[JobKind] | None = None
    ) -> Job | None:
        wanted = [k.value for k in kinds] if kinds is not None else None
        async with self._db.connection() as conn:
            while True:
                async with conn.transaction():
                    row = await conn.fetchrow(CLAIMABLE, self._queue, wanted)
                    if row is None:
                        return None
                    status = JobStatus(row["status"])
                    if row["cancel_requested"]:
                        steps_to(status, JobStatus.CANCELLED)
                        await self._cancel_now(conn, row["id"])
                        continue
                    if status is not JobStatus.RUNNING:
                        check_transition(status, JobStatus.RUNNING)
                    claimed = await conn.fetchrow(CLAIM, row["id"], worker_id, lease_s)
                    assert claimed is not None
                    return _job(claimed)

    async def _cancel_now(self, conn: asyncpg.Connection, job_id: str) -> asyncpg.Record | None:
        return await conn.fetchrow(CANCEL_NOW, job_id)

    async def _held(self, conn: asyncpg.Connection, job_id: str, worker_id: str) -> Job:
        """The job, row-locked for this transaction, if ``worker_id`` holds it."""
        return check_held(await self._fetch(conn, job_id, lock=True), worker_id)

    async def renew(
        self, job_id: str, worker_id: str, lease_s: float, progress: JobProgress | None
    ) -> Job:
        async with self._db.connection() as conn, conn.transaction():
            await self._held(conn, job_id, worker_id)
            row = await conn.fetchrow(RENEW, job_id, lease_s, *_progress_args(progress))
        assert row is not None
        return _job(row)

    async def finish(self, job_id: str, worker_id: str, outcome: JobOutcome) -> Job:
        status = outcome.status
        result = outcome.result.model_dump_json() if outcome.result is not None else None
        async with self._db.connection() as conn, conn.transaction():
            job = await self._held(conn, job_id, worker_id)
            check_transition(job.status, status)
            row = await conn.fetchrow(
                FINISH,
                job_id,
                status.value,
                outcome.error_message,
                outcome.error_type,
                result,
                status.terminal,
                *_progress_args(outcome.progress, complete=status is JobStatus.COMPLETED),
            )
        assert row is not None
        return _job(row)

    async def request_cancel(self, job_id: str) -> Job:
        async with self._db.connection() as conn, conn.transaction():
            row = await conn.fetchrow(TO_CANCEL, job_id, self._queue)
            if row is None:
                raise job_not_found(job_id)
            values = dict(row)
            expired = values.pop("expired")
            job = _job(values)
            if job.status not in CANCELLABLE:
                raise not_cancellable(job)
            if job.status is JobStatus.PENDING or expired:
                steps_to(job.status, JobStatus.CANCELLED)
                done = await self._cancel_now(conn, job_id)
            else:
                done = await conn.fetchrow(REQUEST_CANCEL, job_id)
        assert done is not None
        return _job(done)

    async def release(self, worker_id: str) -> int:
        async with self._db.connection() as conn:
            status = await conn.execute(RELEASE, worker_id, self._queue)
        return int(status.split()[-1])

    async def purge(self, before: datetime) -> int:
        async with self._db.connection() as conn:
            status = await conn.execute(PURGE, before, self._queue)
        return int(status.split()[-1])
