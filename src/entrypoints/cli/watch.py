"""``codebase-mcp watch [PATH ...]``: keep indexes fresh with no MCP server (a job worker and
the watchers in one process), until Ctrl-C."""

from __future__ import annotations

import contextlib

from codebase_mcp_search.entrypoints.cli.common import Run
from codebase_mcp_search.entrypoints.cli.errors import EXIT_OK
from codebase_mcp_search.entrypoints.cli.jobs import shared_store, stop_on_signals
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.watching import resolved_roots, running_watching
from codebase_mcp_search.entrypoints.worker import running_worker


async def watch_command(run: Run) -> int:
    """Watch ``PATH``s (each indexed first if it is not yet) or every indexed repository, and
    run the jobs their changes queue."""
    a = run.args
    shared_store(run.settings, "watch")
    roots = resolved_roots(a.paths) if a.paths else None
    settings = run.settings
    if a.project is not None:
        settings = settings.model_copy(update={"project": a.project})
    stop = stop_on_signals()
    async with contextlib.AsyncExitStack() as stack:
        ws = await stack.enter_async_context(open_workspaces(settings))
        await stack.enter_async_context(running_worker(ws))
        await stack.enter_async_context(running_watching(ws, roots))
        what = ", ".join(roots) if roots else "every indexed repository"
        run.err.print(
            f"watching {what}: changes are indexed as they happen (Ctrl-C stops)",
            highlight=False,
            markup=False,
        )
        await stop.wait()
    run.err.print("stopped watching", highlight=False, markup=False)
    return EXIT_OK
