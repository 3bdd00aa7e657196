"""Indexing runs of the MCP server: progress notifications, and runs the server owns so that
a client giving up does not stop them (and a second call for the same repository joins one)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastmcp import Context

from codebase_core.models import IndexResult, ProgressPhase
from codebase_core.services import ProgressCallback
from entrypoints.facade import Codebase
from entrypoints.mcp.state import ServerState

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


def progress_reporter(ctx: Context, run: int = 0, runs: int = 1) -> ProgressCallback:
    """An indexing progress callback that sends MCP progress notifications (0-100); the
    ``run``-th of ``runs`` indexing runs of one request covers its share of the scale.

    Clients that honour them reset their request timeout on each one. Once a notification
    fails (the client went away), the run goes on without reporting.
    """
    highest = 0.0
    live = True

    async def report(phase: ProgressPhase, done: int, total: int) -> None:
        nonlocal highest, live
        low, high = _PHASE_SPAN[phase]
        within = low + (high - low) * (done / total if total else 1.0)
        value = max(highest, (run * 100.0 + within) / runs)
        highest = value
        if not live:
            return
        if phase == "waiting":
            message = "waiting: another process is indexing this repository"
        elif phase in ("writing", "deleting"):
            message = f"{phase} {done}/{total} files"
        elif phase == "embedding":
            message = f"embedding {done}/{total} chunks"
        else:
            message = phase
        if runs > 1:
            message = f"repository {run + 1}/{runs}: {message}"
        try:
            await ctx.report_progress(value, 100.0, message)
        except Exception:  # any failure to notify: the run itself must not stop for it
            live = False
            log.debug("progress notification failed; indexing goes on", exc_info=True)

    return report


async def index_shared(
    state: ServerState,
    cb: Codebase,
    path: str,
    *,
    name: str | None,
    force: bool,
    progress: ProgressCallback,
) -> IndexResult:
    """Index ``path`` in a task the server owns: a client that gives up (a timeout cancels
    its request) does not stop the run, and a call for a repository already being indexed
    joins that run (a forced call waits for it, then runs its own)."""
    key = (cb.project_id, path)
    running = state.indexing.get(key)
    if running is not None and force:
        with contextlib.suppress(Exception):
            await asyncio.shield(running)
        running = None
    if running is None or running.done():
        running = asyncio.create_task(cb.index(path, name=name, force=force, progress=progress))
        state.indexing[key] = running
        running.add_done_callback(lambda task: _finished(state, key, task))
    return await asyncio.shield(running)


def _finished(state: ServerState, key: tuple[str, str], task: asyncio.Task[IndexResult]) -> None:
    if state.indexing.get(key) is task:
        del state.indexing[key]
    if not task.cancelled() and task.exception() is not None:
        # Seen by whoever awaited it; logged for a run whose client had gone.
        log.info("indexing %s ended with %s", key[1], task.exception())
