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
    Field(description="The job's id (from start_indexing_background or list_background_jobs)."),
]
JobStatusName = Literal["pending", "running", "blocked", "completed", "failed", "cancelled"]


def register_job_tools(mcp: FastMCP[Any]) -> None:
    """Add the background job tools to ``mcp``."""

    @mcp.tool(annotations={"openWorldHint": False})
    async def start_indexing_background(
        repo_path: RepoPath,
        ctx: Context,
        project_id: ProjectId = None,
        force_reindex: Annotated[
            bool, Field(description="Re-chunk every file (cached vectors are kept).", strict=True)
        ] = False,
    ) -> dict[str, Any]:
        """Start indexing a repository in the background and return at once (creating the
        project if it is new, as index_repository does).

        Returns job_id, status ('pending' until a worker takes it, then 'running'), message,
        estimated_duration_seconds (the last run's duration, null for a first index),
        project_id and database_name. Follow it with get_job_status; stop it with cancel_job.
        A second job for the same repository and project while one is pending, running or
        blocked is refused with DUPLICATE_JOB naming the existing job.
        """
        state = state_of(ctx)
        with coded():
            request = repository_request(state, repo_path, force=force_reindex)
            cb = await state.workspaces.codebase(project_id)
            job = await cb.start_job(request)
            estimate = await cb.jobs.estimate_seconds(cb.project_id, request.root)
        return job_started_payload(job, estimate, cb.database_name)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def get_job_status(job_id: JobId, ctx: Context) -> dict[str, Any]:
        """Where a background job is: status (pending, running, blocked, completed, failed,
        cancelled), progress_percentage (0-100), progress_message (the current work, e.g.
        'Generating embeddings: 2500/10000'), files_scanned, files_indexed, chunks_created,
        created_at, started_at, completed_at, cancelled_at, error_message, error_type (why it
        failed, or what blocks it: it resumes by itself once that is back),
        estimated_time_remaining_seconds, project_id and database_name; then kind ('lexical':
        files chunked and written; 'semantic': their vectors built), attempts (runs begun:
        more than one when it resumed after a crash or a block), vectors_job_id (the semantic
        job a lexical one queued), chunks_embedded (a finished semantic job's last run) and
        semantic_coverage (the repository's vectors, chunks, percent, and the building job's
        eta_seconds). JOB_NOT_FOUND for an unknown id."""
        state = state_of(ctx)
        with coded():
            job = await state.workspaces.jobs.status(job_id)
            layer = await state.workspaces.semantic_layer_of(job)
        return job_status_payload(job, state.workspaces.database_name(job.project_id), layer)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def list_background_jobs(
        ctx: Context,
        status: Annotated[
            JobStatusName | None, Field(description="Only jobs with this status.")
        ] = None,
        limit: Annotated[
            int, Field(description="Jobs per page.", ge=1, le=defaults.MAX_JOB_PAGE, strict=True)
        ] = defaults.DEFAULT_JOB_PAGE,
        offset: Annotated[
            int, Field(description="Jobs to skip.", ge=0, le=defaults.MAX_OFFSET, strict=True)
        ] = 0,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Background jobs of a project, newest first: jobs (job_id, repo_path, repo_name,
        status, progress_percentage, files_indexed, chunks_created, created_at, started_at,
        completed_at, project_id), total_count, limit, offset and project_id. Finished jobs
        are kept 7 days."""
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

    @mcp.tool(annotations={"destructiveHint": False, "openWorldHint": False})
    async def cancel_job(job_id: JobId, ctx: Context) -> dict[str, Any]:
        """Stop a background job. A pending job is cancelled at once ('cancelled'); a running
        or blocked one stops within seconds at its next batch ('cancelling'), and what it
        indexed so far stays consistent and searchable. Returns job_id, status, message,
        files_indexed, chunks_created, cancelled_at and project_id. INVALID_STATUS for a job
        that has already ended."""
        state = state_of(ctx)
        with coded():
            job = await state.workspaces.jobs.cancel(job_id)
        return job_cancel_payload(job)
