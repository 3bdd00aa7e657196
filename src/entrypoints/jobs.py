"""Background jobs wired to the workspaces: the runner a worker calls, the worker itself,
and waiting for a job from a foreground call (``index_repository`` goes through the queue too,
so one repository never has two runs at once whichever tool started them)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import DuplicateJob, JobFailed
from codebase_mcp_search.core.models import IndexResult, Job, JobStatus
from codebase_mcp_search.core.services import (
    CancellationToken,
    JobProgressTracker,
    JobRunner,
    JobWorker,
    WorkerConfig,
)
from codebase_mcp_search.entrypoints.facade import Codebase, Workspaces
from codebase_mcp_search.entrypoints.settings import Settings

log = logging.getLogger("codebase_mcp")

POLL_S = 0.25
"""How often a foreground call reads the job it waits for."""

JobWatcher = Callable[[Job], Awaitable[None] | None]


def new_worker_id() -> str:
    """Unique per process start: host, pid and a random suffix (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def gone_from_this_machine(worker_id: str) -> bool:
    """Whether ``worker_id`` names a process of this machine that no longer runs (a server
    killed and restarted: its jobs resume at once, not when their lease ends). Another
    machine's worker, or a pid reused since, reads as alive: the lease decides then."""
    host, _, rest = worker_id.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # another worker of this process: alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by another user
        return False
    return False


def job_runner(workspaces: Workspaces) -> JobRunner:
    """Runs a job as an indexing run of its project, reporting into the job's tracker."""

    async def run(job: Job, tracker: JobProgressTracker, token: CancellationToken) -> IndexResult:
        cb = await workspaces.codebase(job.project_id)
        return await cb.index(
            job.repo_path,
            name=job.repo_name,
            force=job.force_reindex,
            progress=tracker,
            cancel=token,
            counts=tracker.counts,
        )

    return run


def worker_config(settings: Settings) -> WorkerConfig:
    return WorkerConfig(
        max_concurrent=settings.max_concurrent_jobs,
        lease_s=settings.job_lease_seconds,
        heartbeat_s=min(defaults.JOB_HEARTBEAT_S, settings.job_lease_seconds / 4),
        retention_days=settings.job_retention_days,
    )


@asynccontextmanager
async def running_worker(workspaces: Workspaces) -> AsyncIterator[JobWorker]:
    """A worker claiming jobs of every project until the block ends; jobs it runs then are
    handed back to the queue (the next worker resumes them)."""
    service = await workspaces.jobs()
    worker = JobWorker(
        service.queue,
        job_runner(workspaces),
        new_worker_id(),
        worker_config(workspaces.settings),
        is_dead=gone_from_this_machine,
    )
    task = asyncio.create_task(worker.run(), name="job-worker")
    log.debug("job worker %s started", worker.worker_id)
    try:
        yield worker
    finally:
        await worker.stop()
        with contextlib.suppress(BaseException):
            await task


async def run_as_job(
    cb: Codebase,
    path: str,
    *,
    name: str | None = None,
    force: bool,
    watch: JobWatcher | None = None,
    wake: Callable[[], None] | None = None,
) -> IndexResult:
    """Index through the queue and wait: submit a job for ``path`` (or join the one already
    active for it; a forced call waits for that one, then runs its own), then follow it to
    its end, calling ``watch`` with each reading. A job that fails raises its error's code.
    """
    service = cb.jobs
    while True:
        try:
            job = await cb.start_job(path, name=name, force=force)
        except DuplicateJob as e:
            job = await service.status(e.details["job_id"])
            if force:
                await _follow(service.status, job, watch)
                continue
        if wake is not None:
            wake()
        ended = await _follow(service.status, job, watch)
        if ended.status is JobStatus.COMPLETED and ended.result is not None:
            return ended.result
        if ended.status is JobStatus.CANCELLED:
            raise JobFailed("CANCELLED", f"indexing job {ended.id} was cancelled")
        raise JobFailed(
            ended.error_type or "INTERNAL_ERROR",
            ended.error_message or f"indexing job {ended.id} ended {ended.status.value}",
        )


async def _follow(
    status: Callable[[str], Awaitable[Job]], job: Job, watch: JobWatcher | None
) -> Job:
    while True:
        if watch is not None:
            outcome = watch(job)
            if outcome is not None:
                await outcome
        if job.status.terminal:
            return job
        await asyncio.sleep(POLL_S)
        job = await status(job.id)
