"""InMemoryJobQueue: the reference JobQueue, jobs held in a dict of one process."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from codebase_mcp_search.core.errors import DuplicateJob
from codebase_mcp_search.core.models import (
    Job,
    JobKind,
    JobOutcome,
    JobPage,
    JobProgress,
    JobStatus,
    check_transition,
    steps_to,
    utcnow,
)
from codebase_mcp_search.core.models.jobs import (
    ACTIVE,
    CANCELLABLE,
    check_held,
    duplicate_job,
    job_not_found,
    not_cancellable,
)


class InMemoryJobQueue:
    """Process-local JobQueue over a dict keyed by job id; leases follow ``clock``."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._jobs: dict[str, Job] = {}
        self._clock = clock

    async def submit(self, job: Job) -> Job:
        for other in self._jobs.values():
            if (
                other.status in ACTIVE
                and other.project_id == job.project_id
                and other.repo_path == job.repo_path
                and other.kind is job.kind
            ):
                raise duplicate_job(other)
        if job.id in self._jobs:
            raise DuplicateJob(f"a job with id {job.id} already exists", job_id=job.id)
        stored = job.model_copy(update={"status": JobStatus.PENDING})
        self._jobs[job.id] = stored
        return stored

    async def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise job_not_found(job_id)
        return job

    async def list(
        self,
        *,
        status: JobStatus | None = None,
        project_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> JobPage:
        matches = [
            j
            for j in self._jobs.values()
            if (status is None or j.status is status)
            and (project_id is None or j.project_id == project_id)
        ]
        matches.sort(key=lambda j: (j.created_at, j.id), reverse=True)
        return JobPage(jobs=matches[offset : offset + limit], total_count=len(matches))

    def _expired(self, job: Job, now: datetime) -> bool:
        return job.lease_expires_at is None or job.lease_expires_at <= now

    async def claim(
        self, worker_id: str, lease_s: float, kinds: Collection[JobKind] | None = None
    ) -> Job | None:
        now = self._clock()
        claimable = sorted(
            (
                j
                for j in self._jobs.values()
                if (kinds is None or j.kind in kinds)
                and (
                    j.status is JobStatus.PENDING
                    or (
                        j.status in (JobStatus.RUNNING, JobStatus.BLOCKED) and self._expired(j, now)
                    )
                )
            ),
            key=lambda j: (j.kind is JobKind.SEMANTIC, j.created_at, j.id),
        )
        for job in claimable:
            if job.cancel_requested:
                self._jobs[job.id] = _ended_cancelled(job, now)
                continue
            if job.status is not JobStatus.RUNNING:
                check_transition(job.status, JobStatus.RUNNING)
            claimed = job.model_copy(
                update={
                    "status": JobStatus.RUNNING,
                    "worker_id": worker_id,
                    "lease_expires_at": now + timedelta(seconds=lease_s),
                    "attempts": job.attempts + 1,
                    "started_at": job.started_at or now,
                }
            )
            self._jobs[job.id] = claimed
            return claimed
        return None

    def _held(self, job_id: str, worker_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise job_not_found(job_id)
        return check_held(job, worker_id)

    async def renew(
        self, job_id: str, worker_id: str, lease_s: float, progress: JobProgress | None
    ) -> Job:
        job = self._held(job_id, worker_id)
        if progress is not None:
            job = job.with_progress(progress)
        job = job.model_copy(
            update={"lease_expires_at": self._clock() + timedelta(seconds=lease_s)}
        )
        self._jobs[job_id] = job
        return job

    async def finish(self, job_id: str, worker_id: str, outcome: JobOutcome) -> Job:
        job = self._held(job_id, worker_id)
        check_transition(job.status, outcome.status)
        now = self._clock()
        if outcome.progress is not None:
            job = job.with_progress(outcome.progress)
        update: dict[str, object] = {
            "status": outcome.status,
            "error_message": outcome.error_message,
            "error_type": outcome.error_type,
        }
        if outcome.result is not None:
            update["result"] = outcome.result
        if outcome.status.terminal:
            update.update(lease_expires_at=None, completed_at=now, eta_seconds=None)
            if outcome.status is JobStatus.CANCELLED:
                update["cancelled_at"] = now
            if outcome.status is JobStatus.COMPLETED:
                update.update(progress_percentage=100)
        job = job.model_copy(update=update)
        self._jobs[job_id] = job
        return job

    async def request_cancel(self, job_id: str) -> Job:
        job = await self.get(job_id)
        if job.status not in CANCELLABLE:
            raise not_cancellable(job)
        now = self._clock()
        if job.status is JobStatus.PENDING or self._expired(job, now):
            job = _ended_cancelled(job, now)
        else:
            job = job.model_copy(update={"cancel_requested": True})
        self._jobs[job_id] = job
        return job

    async def release(self, worker_id: str) -> int:
        held = [j for j in self._jobs.values() if j.worker_id == worker_id and j.status in ACTIVE]
        for job in held:
            self._jobs[job.id] = job.model_copy(update={"lease_expires_at": None})
        return len(held)

    async def purge(self, before: datetime) -> int:
        old = [
            j.id
            for j in self._jobs.values()
            if j.status.terminal and j.completed_at is not None and j.completed_at < before
        ]
        for job_id in old:
            del self._jobs[job_id]
        return len(old)


def _ended_cancelled(job: Job, now: datetime) -> Job:
    steps_to(job.status, JobStatus.CANCELLED)  # InvalidStatus when there is no way
    return job.model_copy(
        update={
            "status": JobStatus.CANCELLED,
            "cancel_requested": True,
            "cancelled_at": now,
            "completed_at": now,
            "lease_expires_at": None,
            "eta_seconds": None,
            "progress_message": "Cancelled",
        }
    )
