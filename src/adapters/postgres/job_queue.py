"""PgJobQueue: the background jobs of every project in one table that all workers share."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import asyncpg

from codebase_mcp_search.adapters.postgres.database import PgDatabase
from codebase_mcp_search.adapters.postgres.schema import GLOBAL_SCHEMA
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import (
    IndexResult,
    Job,
    JobOutcome,
    JobPage,
    JobProgress,
    JobStatus,
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

_T = f"{GLOBAL_SCHEMA}.jobs"
_COLUMNS = (
    "id::text AS id, project_id, repo_path, repo_name, force_reindex, status, cancel_requested, "
    "progress_percentage, progress_message, files_scanned, files_indexed, chunks_created, "
    "eta_seconds, error_message, error_type, result::text AS result, worker_id, "
    "lease_expires_at, attempts, created_at, started_at, completed_at, cancelled_at"
)
_ACTIVE_SQL = "('pending', 'running', 'blocked')"
# A lease that ran out: its worker died (or lost the database) and the job may be taken over.
_EXPIRED = "(lease_expires_at IS NULL OR lease_expires_at <= clock_timestamp())"


def _job(row: Mapping[str, Any]) -> Job:
    values: dict[str, Any] = dict(row)
    values.pop("total", None)
    values["status"] = JobStatus(values["status"])
    raw = values.pop("result")
    values["result"] = IndexResult.model_validate_json(raw) if raw is not None else None
    return Job(**values)


def _progress_args(progress: JobProgress | None, *, complete: bool = False) -> tuple[Any, ...]:
    """Parameters of ``_progress_set``; ``complete`` sets the percentage to 100."""
    if progress is None:
        return (100 if complete else None, None, None, None, None, None)
    return (
        100 if complete else progress.percentage,
        progress.message,
        progress.files_scanned,
        progress.files_indexed,
        progress.chunks_created,
        progress.eta_seconds,
    )


def _progress_set(p: int, ended: str = "false") -> str:
    """Columns a progress update sets from parameters $p .. $p+5 (NULL: keep); the percentage
    only grows, and the ETA is cleared once a job has ended."""
    return f"""progress_percentage = greatest(progress_percentage, coalesce(${p}, 0)),
        progress_message = coalesce(${p + 1}, progress_message),
        files_scanned = coalesce(${p + 2}, files_scanned),
        files_indexed = coalesce(${p + 3}, files_indexed),
        chunks_created = coalesce(${p + 4}, chunks_created),
        eta_seconds = CASE WHEN {ended} THEN NULL
            WHEN ${p + 1}::text IS NULL THEN eta_seconds ELSE ${p + 5} END"""


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
                    f"""INSERT INTO {_T} (id, project_id, repo_path, repo_name, force_reindex,
                            status, progress_message, created_at, queue)
                        VALUES ($1::uuid, $2, $3, $4, $5, 'pending', $6, $7, $8)
                        RETURNING {_COLUMNS}""",
                    job.id,
                    job.project_id,
                    job.repo_path,
                    job.repo_name,
                    job.force_reindex,
                    job.progress_message,
                    job.created_at,
                    self._queue,
                )
            except asyncpg.UniqueViolationError as e:
                if e.constraint_name == "jobs_pkey":
                    raise ValidationFailed("id", job.id, "a job with this id exists") from e
                existing = await conn.fetchrow(
                    f"""SELECT {_COLUMNS} FROM {_T} WHERE project_id = $1 AND repo_path = $2
                        AND status IN {_ACTIVE_SQL} AND queue = $3""",
                    job.project_id,
                    job.repo_path,
                    self._queue,
                )
                if existing is None:  # it ended in between: a retry would succeed
                    return await self.submit(job)
                raise duplicate_job(_job(existing)) from e
        assert row is not None
        return _job(row)

    async def get(self, job_id: str) -> Job:
        async with self._db.connection() as conn:
            return await self._fetch(conn, job_id)

    async def _fetch(self, conn: asyncpg.Connection, job_id: str, lock: str = "") -> Job:
        """The job of this queue (``lock``: a row-locking clause), or ``JOB_NOT_FOUND``."""
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM {_T} WHERE id = $1::uuid AND queue = $2 {lock}",
            job_id,
            self._queue,
        )
        if row is None:
            raise job_not_found(job_id)
        return _job(row)

    async def list(
        self,
        *,
        status: JobStatus | None = None,
        project_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> JobPage:
        where = """WHERE queue = $3 AND ($1::text IS NULL OR status = $1)
                   AND ($2::text IS NULL OR project_id = $2)"""
        args = (status.value if status is not None else None, project_id, self._queue)
        async with self._db.connection() as conn:
            # One statement: a window count costs little over a queue's rows (purged after
            # days), and saves the round trips of a second query in a shared snapshot.
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS}, count(*) OVER () AS total FROM {_T} {where}
                    ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5""",
                *args,
                limit,
                offset,
            )
            if rows:
                total = rows[0]["total"]
            else:  # past the end: the count alone
                total = await conn.fetchval(f"SELECT count(*) FROM {_T} {where}", *args)
        return JobPage(jobs=[_job(r) for r in rows], total_count=total)

    async def claim(self, worker_id: str, lease_s: float) -> Job | None:
        async with self._db.connection() as conn:
            while True:
                async with conn.transaction():
                    row = await conn.fetchrow(
                        f"""SELECT id::text AS id, status, cancel_requested FROM {_T}
                            WHERE queue = $1 AND (status = 'pending'
                               OR (status IN ('running', 'blocked') AND {_EXPIRED}))
                            ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED""",
                        self._queue,
                    )
                    if row is None:
                        return None
                    status = JobStatus(row["status"])
                    if row["cancel_requested"]:
                        steps_to(status, JobStatus.CANCELLED)
                        await self._cancel_now(conn, row["id"])
                        continue
                    if status is not JobStatus.RUNNING:
                        check_transition(status, JobStatus.RUNNING)
                    claimed = await conn.fetchrow(
                        f"""UPDATE {_T} SET status = 'running', worker_id = $2,
                                lease_expires_at = clock_timestamp() + make_interval(secs => $3),
                                attempts = attempts + 1,
                                started_at = coalesce(started_at, clock_timestamp())
                            WHERE id = $1::uuid RETURNING {_COLUMNS}""",
                        row["id"],
                        worker_id,
                        lease_s,
                    )
                    assert claimed is not None
                    return _job(claimed)

    async def _cancel_now(self, conn: asyncpg.Connection, job_id: str) -> asyncpg.Record | None:
        return await conn.fetchrow(
            f"""UPDATE {_T} SET status = 'cancelled', cancel_requested = true,
                    cancelled_at = clock_timestamp(), completed_at = clock_timestamp(),
                    lease_expires_at = NULL, eta_seconds = NULL, progress_message = 'Cancelled'
                WHERE id = $1::uuid RETURNING {_COLUMNS}""",
            job_id,
        )

    async def _held(self, conn: asyncpg.Connection, job_id: str, worker_id: str) -> Job:
        """The job, row-locked for this transaction, if ``worker_id`` holds it."""
        return check_held(await self._fetch(conn, job_id, "FOR UPDATE"), worker_id)

    async def renew(
        self, job_id: str, worker_id: str, lease_s: float, progress: JobProgress | None
    ) -> Job:
        async with self._db.connection() as conn, conn.transaction():
            await self._held(conn, job_id, worker_id)
            row = await conn.fetchrow(
                f"""UPDATE {_T} SET
                        lease_expires_at = clock_timestamp() + make_interval(secs => $2),
                        {_progress_set(3)}
                    WHERE id = $1::uuid RETURNING {_COLUMNS}""",
                job_id,
                lease_s,
                *_progress_args(progress),
            )
        assert row is not None
        return _job(row)

    async def finish(self, job_id: str, worker_id: str, outcome: JobOutcome) -> Job:
        status = outcome.status
        result = outcome.result.model_dump_json() if outcome.result is not None else None
        async with self._db.connection() as conn, conn.transaction():
            job = await self._held(conn, job_id, worker_id)
            check_transition(job.status, status)
            row = await conn.fetchrow(
                f"""UPDATE {_T} SET status = $2, error_message = $3, error_type = $4,
                        result = coalesce($5::jsonb, result),
                        lease_expires_at = CASE WHEN $6 THEN NULL ELSE lease_expires_at END,
                        completed_at = CASE WHEN $6 THEN clock_timestamp() END,
                        cancelled_at = CASE WHEN $2 = 'cancelled' THEN clock_timestamp() END,
                        {_progress_set(7, ended="$6")}
                    WHERE id = $1::uuid RETURNING {_COLUMNS}""",
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
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS}, {_EXPIRED} AS expired FROM {_T} "
                "WHERE id = $1::uuid AND queue = $2 FOR UPDATE",
                job_id,
                self._queue,
            )
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
                done = await conn.fetchrow(
                    f"""UPDATE {_T} SET cancel_requested = true WHERE id = $1::uuid
                        RETURNING {_COLUMNS}""",
                    job_id,
                )
        assert done is not None
        return _job(done)

    async def release(self, worker_id: str) -> int:
        async with self._db.connection() as conn:
            status = await conn.execute(
                f"""UPDATE {_T} SET lease_expires_at = NULL
                    WHERE worker_id = $1 AND status IN {_ACTIVE_SQL} AND queue = $2""",
                worker_id,
                self._queue,
            )
        return int(status.split()[-1])

    async def purge(self, before: datetime) -> int:
        async with self._db.connection() as conn:
            status = await conn.execute(
                f"""DELETE FROM {_T} WHERE status IN ('completed', 'failed', 'cancelled')
                    AND completed_at < $1 AND queue = $2""",
                before,
                self._queue,
            )
        return int(status.split()[-1])
