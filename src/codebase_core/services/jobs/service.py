"""JobService: the job use cases (start, run and wait, status, list, cancel) over a ``JobQueue``.

"Index this repository and wait" runs through the queue too (``run``), so one repository never
has two runs at once, whichever interface started them, and a caller that gives up (a client's
timeout) leaves the job to finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from codebase_mcp_search.core.errors import DuplicateJob, JobFailed, StoreUnavailable
from codebase_mcp_search.core.models import (
    MAX_JOB_PAGE,
    IndexRequest,
    IndexResult,
    Job,
    JobKind,
    JobPage,
    JobQuery,
    JobStatus,
    check_job_id,
    new_job,
    utcnow,
)
from codebase_mcp_search.core.ports import JobQueue

ESTIMATE_FROM = 20
"""Completed jobs of a project looked at for a repository's last duration."""
POLL_S = 0.25
"""How often ``run`` reads the job it waits for."""
OUTAGE_S = 30.0
"""How long ``run`` keeps following a job while the database does not answer (the job's
worker waits for it too, and an embedded server is back within seconds) before it gives up
with the database's error."""

JobWatcher = Callable[[Job], Awaitable[None] | None]
"""Hears each reading of a job that ``run`` follows."""


class LocalWorker(Protocol):
    """A worker of this process (``JobWorker``), told of submits and cancels at once rather
    than at its next poll or heartbeat."""

    def wake(self) -> None: ...
    def cancel_requested(self, job_id: str) -> None: ...


class JobService:
    """Background indexing jobs over a ``JobQueue`` (workers run them; see ``JobWorker``)."""

    def __init__(
        self,
        queue: JobQueue,
        clock: Callable[[], datetime] = utcnow,
        poll_s: float = POLL_S,
        outage_s: float = OUTAGE_S,
    ) -> None:
        self._queue = queue
        self._clock = clock
        self._poll_s = poll_s
        self._outage_s = outage_s
        self._local: list[LocalWorker] = []

    @property
    def queue(self) -> JobQueue:
        return self._queue

    def attach(self, worker: LocalWorker) -> None:
        """Tell ``worker`` (of this process) of every submit and cancel from now on."""
        self._local.append(worker)

    def detach(self, worker: LocalWorker) -> None:
        if worker in self._local:
            self._local.remove(worker)

    async def start(
        self, project_id: str, request: IndexRequest, kind: JobKind = JobKind.LEXICAL
    ) -> Job:
        """A new pending job building ``kind``'s layer for ``request`` in ``project_id``;
        ``DuplicateJob`` while another of that kind is active for its repository. A lexical
        job that leaves chunks without a vector queues a semantic one when it ends (see
        ``JobWorker``)."""
        job = new_job(project_id, request, kind, self._clock())
        submitted = await self._queue.submit(job)
        for worker in self._local:
            worker.wake()
        return submitted

    async def run(
        self, project_id: str, request: IndexRequest, watch: JobWatcher | None = None
    ) -> IndexResult:
        """Index through the queue and wait for the lexical layer: submit a lexical job for
        ``request`` (or join the one already active for its repository; a forced request waits
        for that one, then submits its own), then follow it to its end, calling ``watch`` with
        each reading. Its result names the semantic job building the vectors, if one was
        queued. A job that does not complete raises ``JobFailed`` with its error's code; a database
        away for longer than ``outage_s`` meanwhile, its ``StoreUnavailable``."""
        while True:
            try:
                job = await self.start(project_id, request)
            except DuplicateJob as e:
                job = await self.status(e.details["job_id"])
                if request.force:
                    await self._follow(job, watch)
                    continue
            ended = await self._follow(job, watch)
            if ended.status is JobStatus.COMPLETED and isinstance(ended.result, IndexResult):
                return ended.result
            if ended.status is JobStatus.CANCELLED:
                raise JobFailed("CANCELLED", f"indexing job {ended.id} was cancelled")
            raise JobFailed(
                ended.error_type or "INTERNAL_ERROR",
                ended.error_message or f"indexing job {ended.id} ended {ended.status.value}",
            )

    async def _follow(self, job: Job, watch: JobWatcher | None) -> Job:
        while True:
            if watch is not None:
                outcome = watch(job)
                if outcome is not None:
                    await outcome
            if job.status.terminal:
                return job
            job = await self._next_reading(job.id)

    async def _next_reading(self, job_id: str) -> Job:
        """The job, read again after ``poll_s``; through a database outage of up to
        ``outage_s`` (then its ``StoreUnavailable``)."""
        loop = asyncio.get_running_loop()
        away_since: float | None = None
        while True:
            await asyncio.sleep(self._poll_s)
            try:
                return await self._queue.get(job_id)
            except StoreUnavailable:
                now = loop.time()
                away_since = now if away_since is None else away_since
                if now - away_since >= self._outage_s:
                    raise

    async def estimate_seconds(self, project_id: str, repo_path: str) -> float | None:
        """How long the last completed lexical job of this repository took (None: never
        indexed by a job, so nothing to go by)."""
        page = await self._queue.list(
            status=JobStatus.COMPLETED, project_id=project_id, limit=ESTIMATE_FROM
        )
        for job in page.jobs:
            lexical = job.kind is JobKind.LEXICAL
            if lexical and job.repo_path == repo_path and job.started_at and job.completed_at:
                return round((job.completed_at - job.started_at).total_seconds(), 1)
        return None

    async def active(self, project_id: str) -> list[Job]:
        """The jobs of ``project_id`` not yet ended: running, then pending and blocked."""
        found: list[Job] = []
        for status in (JobStatus.RUNNING, JobStatus.PENDING, JobStatus.BLOCKED):
            page = await self._queue.list(status=status, project_id=project_id, limit=MAX_JOB_PAGE)
            found.extend(page.jobs)
        return found

    async def status(self, job_id: object) -> Job:
        return await self._queue.get(check_job_id(job_id))

    async def list(self, query: JobQuery) -> JobPage:
        return await self._queue.list(
            status=query.status,
            project_id=query.project_id,
            limit=query.page.limit,
            offset=query.page.offset,
        )

    async def cancel(self, job_id: object) -> Job:
        """Cancel a job, or ask its worker to (see ``JobQueue.request_cancel``); a worker of
        this process running it stops at once."""
        job = await self._queue.request_cancel(check_job_id(job_id))
        for worker in self._local:
            worker.cancel_requested(job.id)
        return job
