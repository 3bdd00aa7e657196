"""JobService: the job tools' use cases (start, status, list, cancel), validated."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from codebase_mcp_search.core.errors import InvalidLimit, ValidationFailed
from codebase_mcp_search.core.models import (
    MAX_JOB_PAGE,
    Job,
    JobPage,
    JobStatus,
    check_job_id,
    new_job_id,
    utcnow,
)
from codebase_mcp_search.core.models.base import MAX_OFFSET
from codebase_mcp_search.core.ports import JobQueue

ESTIMATE_FROM = 20
"""Completed jobs of a project looked at for a repository's last duration."""


class JobService:
    """Background indexing jobs over a ``JobQueue`` (workers run them; see ``JobWorker``)."""

    def __init__(self, queue: JobQueue, clock: Callable[[], datetime] = utcnow) -> None:
        self._queue = queue
        self._clock = clock

    @property
    def queue(self) -> JobQueue:
        return self._queue

    async def start(
        self, *, project_id: str, repo_path: str, repo_name: str, force: bool = False
    ) -> Job:
        """A new pending job for an absolute, existing ``repo_path`` (the caller resolves
        it); ``DuplicateJob`` while another is active for it."""
        job = Job(
            id=new_job_id(),
            project_id=project_id,
            repo_path=repo_path,
            repo_name=repo_name,
            force_reindex=force,
            created_at=self._clock(),
        )
        return await self._queue.submit(job)

    async def estimate_seconds(self, project_id: str, repo_path: str) -> float | None:
        """How long the last completed job of this repository took (None: never indexed by a
        job, so nothing to go by)."""
        page = await self._queue.list(
            status=JobStatus.COMPLETED, project_id=project_id, limit=ESTIMATE_FROM
        )
        for job in page.jobs:
            if job.repo_path == repo_path and job.started_at and job.completed_at:
                return round((job.completed_at - job.started_at).total_seconds(), 1)
        return None

    async def status(self, job_id: object) -> Job:
        return await self._queue.get(check_job_id(job_id))

    async def list(
        self,
        *,
        status: object = None,
        project_id: str | None = None,
        limit: object = 20,
        offset: object = 0,
    ) -> JobPage:
        parsed = JobStatus.parse(status) if status is not None else None
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationFailed("limit", limit, f"must be an integer from 1 to {MAX_JOB_PAGE}")
        if not 1 <= limit <= MAX_JOB_PAGE:
            raise InvalidLimit(limit, 1, MAX_JOB_PAGE)
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
            raise ValidationFailed("offset", offset, f"must be an integer from 0 to {MAX_OFFSET}")
        return await self._queue.list(
            status=parsed, project_id=project_id, limit=limit, offset=offset
        )

    async def cancel(self, job_id: object) -> Job:
        return await self._queue.request_cancel(check_job_id(job_id))
