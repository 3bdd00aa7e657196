"""MCP progress notifications of indexing runs, on the runs' one scale (``RunProgress``):
those of a job that ``index_repository`` follows, and those of ``search_code``'s refresh,
which indexes in the call."""

from __future__ import annotations

import logging

from fastmcp import Context

from codebase_mcp_search.core.models import Job
from codebase_mcp_search.core.services import JobWatcher, RunProgress

log = logging.getLogger("codebase_mcp")


class _Notifier:
    """MCP progress notifications (0-100) of the ``run``-th of ``runs`` runs of one request,
    which covers its share of the scale, each sent once. Clients that honour them reset their
    request timeout on each one. Once a notification fails (the client went away), the work
    goes on without reporting."""

    def __init__(self, ctx: Context, run: int, runs: int) -> None:
        self.ctx, self.run, self.runs = ctx, run, runs
        self.live = True
        self._last: tuple[float, str] | None = None

    async def send(self, percent: float, message: str) -> None:
        value = (self.run * 100.0 + percent) / self.runs
        if not self.live or (value, message) == self._last:
            return
        self._last = (value, message)
        if self.runs > 1:
            message = f"repository {self.run + 1}/{self.runs}: {message}"
        try:
            await self.ctx.report_progress(value, 100.0, message)
        except Exception:  # any failure to notify: the work itself must not stop for it
            self.live = False
            log.debug("progress notification failed; indexing goes on", exc_info=True)


def progress_reporter(ctx: Context, run: int = 0, runs: int = 1) -> RunProgress:
    """An indexing run's progress tracker that sends MCP progress notifications."""
    notifier = _Notifier(ctx, run, runs)
    return RunProgress(on_change=lambda t: notifier.send(t.percentage, t.message))


def job_progress(ctx: Context, run: int = 0, runs: int = 1) -> JobWatcher:
    """MCP progress notifications from a job's readings (what its worker recorded)."""
    notifier = _Notifier(ctx, run, runs)

    async def watch(job: Job) -> None:
        message = job.progress_message
        if job.status.value in ("pending", "blocked"):
            message = f"{job.status.value}: {message}"
        await notifier.send(job.progress_percentage, message)

    return watch
