"""Indexing runs of the MCP server and their MCP progress notifications: ``index_repository``
goes through the job queue (so one repository never has two runs at once, whichever tool
started them); ``search_code``'s refresh runs in the call (cheap, incremental)."""

from __future__ import annotations

import logging

from fastmcp import Context

from codebase_mcp_search.core.models import IndexResult, Job, ProgressPhase
from codebase_mcp_search.core.services import ProgressCallback
from codebase_mcp_search.entrypoints.facade import Codebase
from codebase_mcp_search.entrypoints.jobs import JobWatcher, run_as_job
from codebase_mcp_search.entrypoints.mcp.state import ServerState

log = logging.getLogger("codebase_mcp")


# Where each phase of an indexing run sits on a 0-100 progress scale (progress only grows).
_PHASE_SPAN: dict[ProgressPhase, tuple[float, float]] = {
    "waiting": (0.0, 0.0),
    "scanning": (0.0, 5.0),
    "chunking": (5.0, 5.0),
    "embedding": (5.0, 5.0),
    "writing": (5.0, 90.0),
    "deleting": (90.0, 95.0),
    "optimizing": (95.0, 99.0),
    "done": (100.0, 100.0),
}


class _Notifier:
    """MCP progress notifications (0-100) of the ``run``-th of ``runs`` runs of one request,
    which covers its share of the scale. Clients that honour them reset their request
    timeout on each one. Once a notification fails (the client went away), the work goes on
    without reporting."""

    def __init__(self, ctx: Context, run: int, runs: int) -> None:
        self.ctx, self.run, self.runs = ctx, run, runs
        self.live = True

    def scaled(self, percent: float) -> float:
        return (self.run * 100.0 + percent) / self.runs

    async def send(self, value: float, message: str) -> None:
        if not self.live:
            return
        if self.runs > 1:
            message = f"repository {self.run + 1}/{self.runs}: {message}"
        try:
            await self.ctx.report_progress(value, 100.0, message)
        except Exception:  # any failure to notify: the work itself must not stop for it
            self.live = False
            log.debug("progress notification failed; indexing goes on", exc_info=True)


def progress_reporter(ctx: Context, run: int = 0, runs: int = 1) -> ProgressCallback:
    """An indexing progress callback that sends MCP progress notifications (see
    ``_Notifier``)."""
    notifier = _Notifier(ctx, run, runs)
    highest = 0.0

    async def report(phase: ProgressPhase, done: int, total: int) -> None:
        nonlocal highest
        low, high = _PHASE_SPAN[phase]
        within = low + (high - low) * (done / total if total else 1.0)
        highest = max(highest, notifier.scaled(within))
        if not notifier.live:
            return
        if phase == "waiting":
            message = "waiting: another process is indexing this repository"
        elif phase in ("writing", "deleting"):
            message = f"{phase} {done}/{total} files"
        elif phase == "embedding":
            message = f"embedding {done}/{total} chunks"
        else:
            message = phase
        await notifier.send(highest, message)

    return report


def job_progress(ctx: Context, run: int = 0, runs: int = 1) -> JobWatcher:
    """MCP progress notifications (see ``_Notifier``) from a job's readings, each sent once."""
    notifier = _Notifier(ctx, run, runs)
    last: tuple[float, str] | None = None

    async def watch(job: Job) -> None:
        nonlocal last
        value = notifier.scaled(job.progress_percentage)
        message = job.progress_message
        if job.status.value in ("pending", "blocked"):
            message = f"{job.status.value}: {message}"
        if (value, message) == last:
            return
        last = (value, message)
        await notifier.send(value, message)

    return watch


async def index_shared(
    state: ServerState,
    cb: Codebase,
    path: str,
    *,
    name: str | None,
    force: bool,
    watch: JobWatcher | None,
) -> IndexResult:
    """Index ``path`` as a job and wait for it. A client that gives up (a timeout cancels its
    request) does not stop the job; a call for a repository whose job is active joins it."""
    wake = state.worker.wake if state.worker is not None else None
    return await run_as_job(cb, path, name=name, force=force, watch=watch, wake=wake)
