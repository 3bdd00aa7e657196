"""The ``JobQueue`` port: background indexing jobs shared by every worker of a store."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models import (
    Job,
    JobKind,
    JobOutcome,
    JobPage,
    JobProgress,
    JobStatus,
)


@runtime_checkable
class JobQueue(Protocol):
    """Background indexing jobs, shared by every worker of a store (all projects).

    Contract:
    - ``submit`` stores a new pending job; while a job of the same kind for the same
      (project_id, repo_path) is pending, running or blocked it raises ``DuplicateJob`` naming
      that job's id instead (jobs of the two kinds of one repository coexist).
    - ``get`` raises ``JobNotFound``; ``list`` gives jobs newest first (created_at, then id,
      descending) filtered by status and project, with the total before ``limit``/``offset``.
    - ``claim`` gives ``worker_id`` the oldest job of one of ``kinds`` (None: any), lexical
      jobs before semantic ones, that is pending, or running or blocked with
      an expired lease (its worker died), as ``running`` with a lease of ``lease_s`` seconds;
      concurrent claims never get the same job. A claimed job whose cancellation was asked is
      ended ``cancelled`` instead of returned. None when nothing is claimable.
    - ``renew`` extends the lease of a job ``worker_id`` holds and records ``progress``; it
      returns the job (``cancel_requested`` tells the worker to stop). ``finish`` moves a held
      job to an outcome's status (the state machine of ``models.jobs``, else
      ``InvalidStatus``); ``blocked`` keeps the lease, a terminal status ends it. Both raise
      ``JobLeaseLost`` when the worker no longer holds the job.
    - ``request_cancel``: a pending job, or one whose lease expired, ends ``cancelled`` at
      once; a running or blocked one is marked for its worker to stop; a terminal one raises
      ``InvalidStatus`` naming its status.
    - ``release`` lets a worker that shuts down hand its held jobs back (lease expired), so
      the next worker resumes them at once. ``purge`` deletes terminal jobs finished before
      ``before`` and returns how many.
    - Infrastructure failures raise ``StoreUnavailable``.
    """

    async def submit(self, job: Job) -> Job:
        """Store a new pending job (see class doc)."""
        ...

    async def get(self, job_id: str) -> Job:
        """The job with this id."""
        ...

    async def list(
        self,
        *,
        status: JobStatus | None = None,
        project_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> JobPage:
        """A page of jobs, newest first."""
        ...

    async def claim(
        self, worker_id: str, lease_s: float, kinds: Collection[JobKind] | None = None
    ) -> Job | None:
        """The next job for this worker, now running and leased to it."""
        ...

    async def renew(
        self, job_id: str, worker_id: str, lease_s: float, progress: JobProgress | None
    ) -> Job:
        """Extend a held job's lease, recording its progress."""
        ...

    async def finish(self, job_id: str, worker_id: str, outcome: JobOutcome) -> Job:
        """Move a held job to ``outcome.status`` (blocked, running again, or terminal)."""
        ...

    async def request_cancel(self, job_id: str) -> Job:
        """Cancel a job, or ask its worker to (see class doc)."""
        ...

    async def release(self, worker_id: str) -> int:
        """Hand back every job this worker holds; returns how many."""
        ...

    async def purge(self, before: datetime) -> int:
        """Delete terminal jobs that ended before ``before``."""
        ...
