"""Code search tools: index_repository, search_code, list/delete repositories, list_projects.

Tools are thin: build the use case's request (``IndexRequest``, ``SearchQuery``) once, call
the service that runs it, map errors (``coded``), shape the response.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any, Literal

from fastmcp import Context, FastMCP
from fastmcp.tools.base import ToolResult
from pydantic import Field

from codebase_mcp_search.adapters.filesystem import read_head
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import IndexRequest, IndexResult, SearchQuery
from codebase_mcp_search.entrypoints.mcp.errors import coded
from codebase_mcp_search.entrypoints.mcp.formats import (
    DetailLevel,
    ResponseFormat,
    compact_json,
    index_json,
    index_markdown,
    search_json,
    search_markdown,
)
from codebase_mcp_search.entrypoints.mcp.listing import READ_ONLY, writes
from codebase_mcp_search.entrypoints.mcp.progress import job_progress, progress_reporter
from codebase_mcp_search.entrypoints.mcp.state import ServerState, state_of
from codebase_mcp_search.entrypoints.presenters import deleted_payload, repository_payload
from codebase_mcp_search.entrypoints.requests import index_request

ProjectId = Annotated[
    str | None,
    Field(
        description="An isolated workspace.",
        max_length=64,
    ),
]
# One name per parameter: an alias would be refused by a client that follows the schema, and
# declaring it (two optional names, or a top-level anyOf) is what some clients cannot read.
RepoPath = Annotated[
    str,
    Field(
        description="Absolute path of the repository's root directory.",
        min_length=1,
        max_length=defaults.MAX_PATH_CHARS,
    ),
]
Format = Annotated[
    ResponseFormat,
    Field(description="Output format."),
]
Detail = Annotated[
    DetailLevel,
    Field(description="'concise' drops context lines and cuts content."),
]


def _result(data: dict[str, Any] | str) -> ToolResult:
    if isinstance(data, str):
        return ToolResult(content=data)
    return ToolResult(content=compact_json(data), structured_content=data)


def repository_request(
    state: ServerState, repo_path: str, *, name: str | None = None, force: bool = False
) -> IndexRequest:
    """The ``IndexRequest`` of a tool's ``repo_path``: absolute, inside the allowed roots, an
    existing directory, resolved once (the path checked is the path indexed)."""
    if not os.path.isabs(repo_path):
        raise ValidationFailed(
            "repo_path", repo_path, "must be an absolute path, e.g. /home/me/project"
        )
    return index_request(state.roots.check(repo_path), name=name, force=force)


def _refreshed(results: list[IndexResult]) -> list[dict[str, Any]]:
    return [
        {
            "repository_id": r.repository_id,
            "files_indexed": r.files_indexed,
            "files_deleted": r.files_deleted,
            "status": r.status.value,
            "duration_seconds": r.duration_seconds,
        }
        for r in results
    ]


def register_code_tools(mcp: FastMCP[Any]) -> None:
    """Add the code search tools to ``mcp``."""

    @mcp.tool(annotations=writes(destructive=False, idempotent=True), output_schema=None)
    async def index_repository(
        repo_path: RepoPath,
        ctx: Context,
        name: Annotated[
            str | None,
            Field(
                description="Display name (default: the directory's).",
                max_length=defaults.MAX_REPOSITORY_NAME,
            ),
        ] = None,
        project_id: ProjectId = None,
        force_reindex: Annotated[
            bool,
            Field(
                description="Re-chunk every file (after changing the embedding model).",
                strict=True,
            ),
        ] = False,
        response_format: Format = "json",
        detail_level: Detail = "detailed",
    ) -> ToolResult:
        """Index a repository for search, or update its index (incremental: cheap to re-run).
        Returns its repository_id once search by exact terms works; vectors for search by
        meaning are then built in the background (vectors_job_id, for get_job_status)."""
        state = state_of(ctx)
        with coded():
            request = repository_request(state, repo_path, name=name, force=force_reindex)
            cb = await state.workspaces.codebase(project_id)
            # Through the job queue, joining a job already under way for the repository; a
            # client that gives up (a timeout cancels its request) does not stop the job.
            result = await state.workspaces.jobs.run(
                cb.project_id, await cb.named(request), watch=job_progress(ctx)
            )
        if state.watching is not None:
            state.watching.wake()  # a new repository is watched now, not at the next recheck
        if response_format == "markdown":
            return _result(index_markdown(result, cb.project_id, cb.database_name, detail_level))
        return _result(index_json(result, cb.project_id, cb.database_name, detail_level))

    # Read-only although refresh=true re-indexes changed files first: that brings the server's
    # index up to the files on disk, as a cache would, and changes nothing of the user's.
    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def search_code(
        query: Annotated[
            str,
            Field(
                description="A description ('where are retries configured') or an "
                "identifier ('parse_config').",
                min_length=1,
                max_length=defaults.MAX_QUERY_CHARS,
            ),
        ],
        ctx: Context,
        project_id: ProjectId = None,
        repository_id: Annotated[
            str | None,
            Field(description="Only this repository (id from list_repositories)."),
        ] = None,
        file_type: Annotated[
            str | None,
            Field(
                description="Only this file extension, e.g. 'py'.",
                max_length=defaults.MAX_FILE_TYPE_CHARS,
            ),
        ] = None,
        directory: Annotated[
            str | None,
            Field(
                description="Only under this directory, e.g. 'src/api' (or an absolute path).",
                max_length=defaults.MAX_PATH_CHARS,
            ),
        ] = None,
        language: Annotated[
            str | None,
            Field(
                description="Only this language, e.g. 'python'.",
                max_length=defaults.MAX_LANGUAGE_CHARS,
            ),
        ] = None,
        mode: Annotated[
            Literal["hybrid", "semantic", "lexical"] | None,
            Field(
                description="'hybrid' (the default) fuses meaning and exact terms; 'semantic': "
                "meaning only; 'lexical': exact terms (BM25)."
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                description="Results to return.",
                ge=1,
                le=defaults.MAX_SEARCH_LIMIT,
                strict=True,
            ),
        ] = defaults.DEFAULT_SEARCH_LIMIT,
        refresh: Annotated[
            bool,
            Field(
                description="Re-index changed files first, so no result is stale.",
                strict=True,
            ),
        ] = False,
        response_format: Format = "json",
        detail_level: Detail = "detailed",
    ) -> ToolResult:
        """Search indexed code by meaning and by exact identifiers; returns ranked chunks with
        their file and lines. stale: true marks a file changed since indexing (search with
        refresh=true)."""
        state = state_of(ctx)
        with coded():
            query_ = SearchQuery.build(
                query,
                mode=mode,
                limit=limit,
                repository_id=repository_id,
                file_type=file_type,
                directory=directory,
                language=language,
            )
            cb = await state.workspaces.codebase(project_id, create=False)
            refreshed: list[IndexResult] | None = None
            if refresh:
                refreshed = await cb.refresh(
                    query_.filters.repository_id,
                    only=state.roots.allows,
                    progress=lambda i, n: progress_reporter(ctx, i, n),
                )
            async with state.search_slots:
                result = await cb.search(query_)
        if response_format == "markdown":
            text = search_markdown(result, detail_level)
            if refreshed is not None:
                changed = sum(r.files_indexed + r.files_deleted for r in refreshed)
                text = (
                    f"Refreshed {len(refreshed)} repositories ({changed} files changed).\n\n{text}"
                )
            return _result(text)
        data = search_json(result, cb.project_id, detail_level)
        if refreshed is not None:
            data["refreshed"] = _refreshed(refreshed)
        return _result(data)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def list_repositories(ctx: Context, project_id: ProjectId = None) -> dict[str, Any]:
        """Indexed repositories: id (filters search_code), name, path, counts,
        semantic_percent (chunks with a vector), git branch and commit, watching."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            repos = await cb.repositories()
            layers = await cb.semantic_layers(repos)
        heads = await asyncio.to_thread(lambda: {r.id: read_head(r.path) for r in repos})
        watching = state.watching
        return {
            "repositories": [
                repository_payload(
                    r,
                    layers.get(r.id),
                    head=heads.get(r.id),
                    watching=watching.state(cb.project_id, r.path) if watching else None,
                )
                for r in repos
            ],
            "project_id": cb.project_id,
            "database_name": cb.database_name,
        }

    @mcp.tool(annotations=writes(destructive=True, idempotent=True), output_schema=None)
    async def delete_repository(
        repository_id: Annotated[
            str, Field(description="Id from list_repositories.", min_length=1)
        ],
        ctx: Context,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Remove a repository and its chunks from the index (its files are not touched)."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            repo = await cb.repository(repository_id)
            await cb.delete_repository(repository_id)
        return deleted_payload(repo, cb.project_id)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def list_projects(ctx: Context) -> dict[str, Any]:
        """Every project (workspace) with its counts and size."""
        state = state_of(ctx)
        with coded():
            projects = await state.workspaces.projects()
        return {"projects": [p.model_dump(mode="json") for p in projects]}
