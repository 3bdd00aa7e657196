"""``jobs``, ``index --background`` and ``worker``: the MCP job tools from a shell, and the
worker process that runs jobs with no MCP server."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import IndexResult, Job, JobKind, JobQuery, SemanticLayer
from codebase_mcp_search.entrypoints.cli.admin import when
from codebase_mcp_search.entrypoints.cli.common import Run, open_project
from codebase_mcp_search.entrypoints.cli.errors import EXIT_OK
from codebase_mcp_search.entrypoints.cli.views import columns, dump, page_footer
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.presenters import (
    job_cancel_payload,
    job_started_payload,
    job_status_payload,
    job_summary_payload,
)
from codebase_mcp_search.entrypoints.requests import index_request
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.watching import running_watching
from codebase_mcp_search.entrypoints.worker import running_worker

KINDS = {
    JobKind.LEXICAL: "files chunked and written: search by exact terms",
    JobKind.SEMANTIC: "vectors built: search by meaning",
}


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (where the platform lets a loop hear them)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # not on every platform
            loop.add_signal_handler(sig, stop.set)
    return stop


def shared_store(settings: Settings, flag: str) -> None:
    if settings.store == "memory":
        raise ValidationFailed(
            flag,
            True,
            "background jobs need the Postgres store (the memory store lives and dies with "
            "this process): unset CODEBASE_MCP_STORE, or index in the foreground",
        )


async def index_background(run: Run) -> int:
    """``index PATH --background``: queue a job and return; a worker runs it."""
    a = run.args
    shared_store(run.settings, "--background")
    request = index_request(a.path, name=a.name, force=a.force, field="path")
    root = request.root
    async with open_workspaces(run.settings) as ws:
        cb = await open_project(ws, a.project, create=True)
        job = await cb.start_job(request)
        estimate = await cb.jobs.estimate_seconds(cb.project_id, root)
    if a.json:
        follow = (
            f"follow it with 'codebase-mcp jobs status {job.id}', stop it with "
            f"'codebase-mcp jobs cancel {job.id}'"
        )
        dump(job_started_payload(job, estimate, cb.database_name, follow))
        return EXIT_OK
    out = run.out
    out.print(f"job {job.id} {job.status.value}: indexing {root}", highlight=False, markup=False)
    out.print(
        "a worker runs it (a running 'codebase-mcp serve', or 'codebase-mcp worker'); follow "
        f"it with 'codebase-mcp jobs status {job.id}'",
        highlight=False,
        markup=False,
    )
    return EXIT_OK


def _print_job(job: Job, layer: SemanticLayer | None, run: Run) -> None:
    def line(key: str, value: object) -> None:
        run.out.print(f"{key:<10} {value}", highlight=False, markup=False)

    line("id", job.id)
    line("kind", f"{job.kind.value} ({KINDS[job.kind]})")
    line("status", job.status.value + (" (cancelling)" if job.cancel_requested else ""))
    line("progress", f"{job.progress_percentage}% {job.progress_message}")
    line("repository", f"{job.repo_name} ({job.repo_path})")
    line("project", job.project_id)
    if job.kind is JobKind.LEXICAL:
        line("files", f"{job.files_indexed} indexed of {job.files_scanned} scanned")
        line("chunks", job.chunks_created)
    if isinstance(job.result, IndexResult) and job.result.vectors_job_id:
        line("vectors", f"built by job {job.result.vectors_job_id}")
    if layer is not None:
        line(
            "coverage", f"{layer.vectors}/{layer.chunks} chunks hold a vector ({layer.percent:g}%)"
        )
    line("created", when(job.created_at))
    if job.started_at is not None:
        line("started", when(job.started_at))
    if job.completed_at is not None:
        line("ended", when(job.completed_at))
    if job.eta_seconds is not None:
        line("remaining", f"about {job.eta_seconds:.0f} s")
    if job.error_message:
        line("error", f"{job.error_type}: {job.error_message}")


async def jobs_command(run: Run) -> int:
    """``jobs [list|status ID|cancel ID]``: list_background_jobs, get_job_status, cancel_job."""
    a = run.args
    action = a.action or "list"
    if action == "list":
        query = JobQuery.build(status=a.status, limit=a.limit, offset=a.offset)
    async with open_workspaces(run.settings) as ws:
        service = ws.jobs
        if action == "status":
            job = await service.status(a.job_id)
            database = ws.database_name(job.project_id)
            layer = await ws.semantic_layer_of(job)
        elif action == "cancel":
            job = await service.cancel(a.job_id)
        else:
            cb = await open_project(ws, a.project, create=False)
            page = await service.list(query.model_copy(update={"project_id": cb.project_id}))
            if a.status and not page.total_count:  # how many the filter left out
                everything = JobQuery(project_id=cb.project_id, page=query.page)
                unfiltered = (await service.list(everything)).total_count
    if action == "status":
        if a.json:
            dump(job_status_payload(job, database, layer))
        else:
            _print_job(job, layer, run)
        return EXIT_OK
    if action == "cancel":
        payload = job_cancel_payload(
            job, f"'codebase-mcp jobs status {job.id}' shows 'cancelled' once it has"
        )
        if a.json:
            dump(payload)
        else:
            run.out.print(payload["message"], highlight=False, markup=False)
        return EXIT_OK
    if a.json:
        dump(
            {
                "jobs": [job_summary_payload(j) for j in page.jobs],
                "total_count": page.total_count,
                "limit": query.page.limit,
                "offset": query.page.offset,
                "project_id": cb.project_id,
            }
        )
        return EXIT_OK
    if not page.jobs:
        if page.total_count:
            line = f"No jobs past --offset {query.page.offset} in project {cb.project_id!r}."
        elif a.status:
            has = f"it has {unfiltered}; 'codebase-mcp jobs' lists them" if unfiltered else "none"
            line = f"No jobs with --status {a.status} in project {cb.project_id!r} ({has})."
        else:
            line = f"No jobs in project {cb.project_id!r}."
        run.out.print(line, highlight=False, markup=False)
        return EXIT_OK
    rows = [
        (
            j.id,
            j.kind.value,
            j.status.value,
            f"{j.progress_percentage}%",
            when(j.created_at),
            j.repo_path,
        )
        for j in page.jobs
    ]
    run.out.print(
        columns(("id", "kind", "status", "progress", "created", "repository"), rows),
        highlight=False,
        markup=False,
    )
    footer = page_footer(query.page.offset, len(page.jobs), page.total_count, "jobs")
    run.out.print(footer, highlight=False, markup=False)
    return EXIT_OK


async def worker_command(run: Run) -> int:
    """``worker``: run jobs of every project until SIGINT or SIGTERM; jobs under way then are
    handed back to the queue for the next worker."""
    shared_store(run.settings, "worker")
    settings = run.settings
    if run.args.concurrency is not None:
        settings = settings.model_copy(update={"max_concurrent_jobs": run.args.concurrency})
    if run.args.no_watch:
        settings = settings.model_copy(update={"watch": False})
    stop = stop_on_signals()
    async with contextlib.AsyncExitStack() as stack:
        ws = await stack.enter_async_context(open_workspaces(settings))
        worker = await stack.enter_async_context(running_worker(ws))
        if settings.watch:
            await stack.enter_async_context(running_watching(ws))
        watching = (
            "watching every indexed repository"
            if settings.watch
            else "not watching (CODEBASE_MCP_WATCH=false or --no-watch)"
        )
        run.err.print(
            f"worker {worker.worker_id}: running up to {worker.config.max_concurrent} jobs at "
            f"once, {watching} (Ctrl-C stops)",
            highlight=False,
            markup=False,
        )
        await stop.wait()
    run.err.print("worker stopped; its jobs go back to the queue", highlight=False)
    return EXIT_OK
