"""The job worker of a process (an MCP server's own, or ``codebase-mcp worker``): built with
the project -> indexing service resolver of the container, attached to the job service so
that it hears of this process's submits and cancels at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.services import JobWorker, WorkerConfig
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.workspaces import Workspaces

log = logging.getLogger("codebase_mcp")


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
    jobs = workspaces.jobs
    worker = JobWorker(
        jobs.queue,
        workspaces.services.indexing,
        new_worker_id(),
        worker_config(workspaces.settings),
        is_dead=gone_from_this_machine,
    )
    jobs.attach(worker)
    task = asyncio.create_task(worker.run(), name="job-worker")
    log.debug("job worker %s started", worker.worker_id)
    try:
        yield worker
    finally:
        jobs.detach(worker)
        await worker.stop()
        with contextlib.suppress(BaseException):
            await task
