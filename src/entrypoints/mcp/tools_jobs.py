"""Background job tools: start_indexing_background, get_job_status, list_background_jobs,
cancel_job. A worker runs the jobs: the server's own (CODEBASE_MCP_JOB_WORKER, on by default)
or ``codebase-mcp worker`` processes sharing the database."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import Context, FastMCP
from pydantic import Field

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.models import JobQuery
from codebase_mcp_search.entrypoints.mcp.errors import coded
from codebase_mcp_search.entrypoints.mcp.listing import READ_ONLY, writes
from codebase_mcp_search.entrypoints.mcp.state import state_of
from codebase_mcp_search.entrypoints.mcp.tools_code import ProjectId, RepoPath, repository_request
from codebase_mcp_search.entrypoints.presenters import (
    job_cancel_payload,
    job_started_payload,
    job_status_payload,
    job_summary_payload,
)

JobId = Annotated[
    str,
    Field(description="Id from start_indexing_background or list_background_jobs."),
]
JobStatusName = Literal["pending", "running", "blocked", "completed", "failed", "cancelled"]


def register_job_tools(mcp: FastMCP[Any]) -> None:
    """Add the background job tools to ``mcp``."""

    @mcp.tool(annotations=writes(destructive=False, idempotent=False), output_schema=None)
    async def start_indexing_background(
        repo_path: RepoPath,
        ctx: Context,
        project_id: ProjectId = None,
        force_reindex: Annotated[
            bool, Field(description="Re-chunk every file (cached vectors are kept).", strict=True)
        ] = False,
    ) -> dict[str, Any]:
        """Start indexing a repository in the background; returns its job_id at once (for
        get_job_status and cancel_job). DUPLICATE_JOB while one is active for it."""
        state = state_of(ctx)
        with coded():
            request = repository_request(state, repo_path, force=force_reindex)
            cb = await state.workspaces.codebase(project_id)
            job = await cb.start_job(request)
            estimate = await cb.jobs.estimate_seconds(cb.project_id, request.root)
        return job_started_payload(job, estimate, cb.database_name)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def get_job_status(job_id: JobId, ctx: Context) -> dict[str, Any]:
        """A background job's status and progress; error_type says why it failed or what
        blocks it (a blocked job resumes by itself)."""
        state = state_of(ctx)
        with coded():
            job = await state.workspaces.jobs.status(job_id)
            layer = await state.workspaces.semantic_layer_of(job)
        return job_status_payload(job, state.workspaces.database_name(job.project_id), layer)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def list_background_jobs(
        ctx: Context,
        status: Annotated[
            JobStatusName | None, Field(description="Only jobs in this status.")
        ] = None,
        limit: Annotated[
            int, Field(description="Page size.", ge=1, le=defaults.MAX_JOB_PAGE, strict=True)
        ] = defaults.DEFAULT_JOB_PAGE,
        offset: Annotated[
            int, Field(description="Jobs to skip.", ge=0, le=defaults.MAX_OFFSET, strict=True)
        ] = 0,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Background jobs, newest first, with status and progress (finished ones are kept 7
        days)."""
        state = state_of(ctx)
        with coded():
            # As every tool that reads a project: an unknown one is an error, not an empty list.
            pid = (await state.workspaces.codebase(project_id, create=False)).project_id
            query = JobQuery.build(project_id=pid, status=status, limit=limit, offset=offset)
            page = await state.workspaces.jobs.list(query)
        return {
            "jobs": [job_summary_payload(j) for j in page.jobs],
            "total_count": page.total_count,
            "limit": limit,
            "offset": offset,
            "project_id": pid,
        }

    @mcp.tool(annotations=writes(destructive=False, idempotent=True), output_schema=None)
    async def cancel_job(job_id: JobId, ctx: Context) -> dict[str, Any]:
        """Stop a background job: a pending one at once, a running one within seconds; what
        it indexed stays searchable."""
        state = state_of(ctx)
        with coded():
            job = await state.workspaces.jobs.cancel(job_id)
        return job_cancel_payload(job)
