"""Background indexing jobs: their states, the transitions between them, and their progress.

The state machine is the one rule every queue obeys (``check_transition``):

    pending -> running | cancelled
    running -> completed | failed | cancelled | blocked
    blocked -> running

``completed``, ``failed`` and ``cancelled`` are terminal. A blocked job that is cancelled, or
whose blocker turns out final, runs again first (``steps_to``). A worker taking over a job
whose worker died claims it again without a change of state (running stays running).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from pathlib import PurePath

from pydantic import Field

from codebase_mcp_search.core.defaults import DEFAULT_JOB_PAGE, MAX_JOB_PAGE
from codebase_mcp_search.core.errors import (
    DuplicateJob,
    Hint,
    InvalidStatus,
    JobLeaseLost,
    JobNotFound,
    shorten,
)
from codebase_mcp_search.core.models.base import FrozenModel, Page, check_uuid
from codebase_mcp_search.core.models.indexing import IndexRequest, IndexResult, VectorResult


class JobKind(StrEnum):
    """Which layer of a repository's index a job builds. Each kind is exclusive per repository
    (one active job of it), and the two run side by side: an edit's lexical run never waits
    behind a backfill of vectors."""

    LEXICAL = "lexical"
    """Scan, chunk and write what changed: searchable lexically when it ends."""
    SEMANTIC = "semantic"
    """Embed the chunks still without a vector, in committed batches."""


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @classmethod
    def parse(cls, value: object) -> JobStatus:
        """One of the six values (case and surrounding space ignored), or ``InvalidStatus``."""
        if isinstance(value, JobStatus):
            return value
        if isinstance(value, str):
            v = value.strip().lower()
            for member in cls:
                if member.value == v:
                    return member
        raise InvalidStatus(
            f"Invalid job status: {shorten(repr(value))}. Valid values: {[m.value for m in cls]}",
            value=value,
        )

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})
ACTIVE = frozenset({JobStatus.PENDING, JobStatus.RUNNING, JobStatus.BLOCKED})
"""At most one active job per (project, repository)."""
CANCELLABLE = ACTIVE

ALLOWED: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.PENDING: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED}),
    JobStatus.RUNNING: frozenset(
        {JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.BLOCKED}
    ),
    JobStatus.BLOCKED: frozenset({JobStatus.RUNNING}),
    JobStatus.COMPLETED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}


def can_transition(old: JobStatus, new: JobStatus) -> bool:
    return new in ALLOWED[old]


def check_transition(old: JobStatus, new: JobStatus) -> None:
    """``InvalidStatus`` unless the state machine allows ``old`` -> ``new``."""
    if not can_transition(old, new):
        allowed = sorted(s.value for s in ALLOWED[old]) or "none (terminal)"
        raise InvalidStatus(
            f"a {old.value} job cannot become {new.value}; allowed from {old.value}: {allowed}",
            old=old.value,
            new=new.value,
        )


def steps_to(old: JobStatus, new: JobStatus) -> list[JobStatus]:
    """The allowed states ``old`` passes through to reach ``new`` (ending with ``new``): one
    step, or two through ``running`` from ``blocked``; ``InvalidStatus`` when there is no way."""
    if can_transition(old, new):
        return [new]
    if old is JobStatus.BLOCKED and can_transition(JobStatus.RUNNING, new):
        return [JobStatus.RUNNING, new]
    check_transition(old, new)
    raise AssertionError("unreachable")  # pragma: no cover


def check_job_id(value: object, field: str = "job_id") -> str:
    """A job id as stored: a UUID in any case, trimmed, in its canonical lowercase form."""
    return check_uuid(value, field, "a job id", Hint.JOB_ID)


def new_job_id() -> str:
    return str(uuid.uuid4())


def new_job(project_id: str, request: IndexRequest, kind: JobKind, created_at: datetime) -> Job:
    """A pending job building ``kind``'s layer for ``request``; it names the repository
    ``request.name``, else the root's last part."""
    return Job(
        id=new_job_id(),
        project_id=project_id,
        repo_path=request.root,
        repo_name=request.name or PurePath(request.root).name or request.root,
        force_reindex=request.force and kind is JobKind.LEXICAL,
        kind=kind,
        created_at=created_at,
    )


class JobProgress(FrozenModel):
    """Where a running job is: what a worker writes at each heartbeat."""

    percentage: int = Field(ge=0, le=100)
    message: str
    files_scanned: int = Field(default=0, ge=0)
    files_indexed: int = Field(default=0, ge=0)
    chunks_created: int = Field(default=0, ge=0)
    vectors_stored: int = Field(default=0, ge=0)
    chunks_embedded: int = Field(default=0, ge=0)
    """Chunk texts the model embedded (the rest of the vectors came from the cache)."""
    eta_seconds: float | None = None


class Job(FrozenModel):
    """One request to index a repository, and everything known about its run."""

    id: str
    project_id: str
    repo_path: str
    repo_name: str
    force_reindex: bool = False
    kind: JobKind = JobKind.LEXICAL
    status: JobStatus = JobStatus.PENDING
    cancel_requested: bool = False
    progress_percentage: int = Field(default=0, ge=0, le=100)
    progress_message: str = "Queued"
    files_scanned: int = 0
    files_indexed: int = 0
    chunks_created: int = 0
    vectors_stored: int = 0
    chunks_embedded: int = 0
    """Counted, like the files, so that a run resuming the job goes on from them."""
    eta_seconds: float | None = None
    error_message: str | None = None
    error_type: str | None = None
    result: IndexResult | VectorResult | None = None
    worker_id: str | None = None
    lease_expires_at: datetime | None = None
    attempts: int = 0
    """How many times a worker claimed it (more than one: resumed after a crash or a block)."""
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    cancelled_at: datetime | None = None

    def request(self) -> IndexRequest:
        """The indexing run this job stands for."""
        return IndexRequest(root=self.repo_path, name=self.repo_name, force=self.force_reindex)

    def with_progress(self, progress: JobProgress) -> Job:
        return self.model_copy(
            update={
                "progress_percentage": max(self.progress_percentage, progress.percentage),
                "progress_message": progress.message,
                "files_scanned": progress.files_scanned,
                "files_indexed": progress.files_indexed,
                "chunks_created": progress.chunks_created,
                "vectors_stored": progress.vectors_stored,
                "chunks_embedded": progress.chunks_embedded,
                "eta_seconds": progress.eta_seconds,
            }
        )


class JobPage(FrozenModel):
    """A page of jobs, newest first, and how many match in all."""

    jobs: list[Job]
    total_count: int


class JobQuery(FrozenModel):
    """Which jobs to list: a validated request, built once by the interface that received it."""

    project_id: str | None = None
    """None: every project's."""
    status: JobStatus | None = None
    page: Page = Page(limit=DEFAULT_JOB_PAGE)

    @classmethod
    def build(
        cls,
        *,
        project_id: str | None = None,
        status: object = None,
        limit: object = None,
        offset: object = None,
    ) -> JobQuery:
        """Validate raw fields (None: no filter, the default page), raising coded errors."""
        page = Page.build(limit, offset, default=DEFAULT_JOB_PAGE, maximum=MAX_JOB_PAGE)
        parsed = JobStatus.parse(status) if status is not None else None
        return cls(project_id=project_id, status=parsed, page=page)


class JobOutcome(FrozenModel):
    """How a worker ends (or pauses) a job it holds."""

    status: JobStatus
    error_message: str | None = None
    error_type: str | None = None
    result: IndexResult | VectorResult | None = None
    progress: JobProgress | None = None


def duplicate_job(existing: Job) -> DuplicateJob:
    """The error for a second active job of one repository, naming the first."""
    return DuplicateJob(
        f"{existing.kind.value} job {existing.id} is already {existing.status.value} for "
        f"{existing.repo_path} in "
        f"project {existing.project_id!r}",
        hint=Hint.FOLLOW_JOB,
        job_id=existing.id,
    )


def not_cancellable(job: Job) -> InvalidStatus:
    """The error for cancelling a job that has ended."""
    return InvalidStatus(
        f"job {job.id} is {job.status.value} and cannot be cancelled; cancellable statuses: "
        f"{sorted(s.value for s in CANCELLABLE)}",
        job_id=job.id,
        status=job.status.value,
    )


def job_not_found(job_id: str) -> JobNotFound:
    return JobNotFound(f"Job not found: {job_id}", job_id=job_id)


def check_held(job: Job, worker_id: str) -> Job:
    """``job`` if ``worker_id`` holds it (claimed it and it has not ended), else
    ``JobLeaseLost``: every queue's rule for what a worker may still do to a job."""
    if job.worker_id != worker_id or job.status.terminal:
        raise JobLeaseLost(
            f"job {job.id} is no longer held by worker {worker_id} (status {job.status})",
            job_id=job.id,
        )
    return job
