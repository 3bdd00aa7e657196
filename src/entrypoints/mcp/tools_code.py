"""Code search tools: index_repository, search_code, list/delete repositories, list_projects.

Tools are thin: build the use case's request (``IndexRequest``, ``SearchQuery``) once, call
the service that runs it, map errors (``coded``), shape the response.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from fastmcp import Context, FastMCP
from fastmcp.tools.base import ToolResult
from pydantic import AliasChoices, Field

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
from codebase_mcp_search.entrypoints.mcp.progress import job_progress, progress_reporter
from codebase_mcp_search.entrypoints.mcp.state import ServerState, state_of
from codebase_mcp_search.entrypoints.presenters import deleted_payload, repository_payload
from codebase_mcp_search.entrypoints.requests import index_request

ProjectId = Annotated[
    str | None,
    Field(
        description="Workspace: 1-64 ASCII letters, digits, '-', '_' or spaces. Each project "
        "is isolated (its own Postgres schema). Default: the server's project ('default').",
        max_length=64,
    ),
]
RepoPath = Annotated[
    str,
    Field(
        validation_alias=AliasChoices("repo_path", "path"),
        description="Absolute path of the repository's root directory ('path' is accepted too).",
        min_length=1,
        max_length=defaults.MAX_PATH_CHARS,
    ),
]
Format = Annotated[
    ResponseFormat,
    Field(description="'json' (structured) or 'markdown' (readable text)."),
]
Detail = Annotated[
    DetailLevel,
    Field(
        description="'detailed': everything; 'concise': no context lines, content cut to "
        "200 characters, rounded scores (about 70% fewer tokens)."
    ),
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

    @mcp.tool(annotations={"openWorldHint": False})
    async def index_repository(
        repo_path: RepoPath,
        ctx: Context,
        name: Annotated[
            str | None,
            Field(
                description="Display name, not blank (default: the repository's own; a first "
                "index takes the directory name).",
                max_length=defaults.MAX_REPOSITORY_NAME,
            ),
        ] = None,
        project_id: ProjectId = None,
        force_reindex: Annotated[
            bool,
            Field(
                description="Re-chunk every file (needed after changing the embedding model); "
                "cached vectors are kept.",
                strict=True,
            ),
        ] = False,
        response_format: Format = "json",
        detail_level: Detail = "detailed",
    ) -> ToolResult:
        """Index a repository for search, or bring its index up to date.

        Two layers: this call returns once the files are chunked and written, when search
        works by exact terms with the ranking stack (seconds, even for 10,000 files); the
        vectors for search by meaning are then built in the background by a semantic job
        (vectors_job_id; follow it with get_job_status), and searches use them as they are
        stored. Incremental: only files whose content changed since the last run are
        re-chunked, and only their changed chunks re-embedded, so re-running it on an indexed
        repository is cheap. Sends progress notifications while it runs; calling it again
        while a run is under way joins that run.

        Returns repository_id (use it to filter search_code), files_indexed, chunks_created,
        vectors_missing (chunks still waiting for a vector) and vectors_job_id,
        duration_seconds, status (success / partial / failed), errors, files_skipped (files
        left out on purpose, counted by reason: too_large, binary, minified, secret,
        lock_file, ignored, excluded_dir; the list itself with detail_level 'detailed'),
        message, project_id and database_name.
        """
        state = state_of(ctx)
        with coded():
            request = repository_request(state, repo_path, name=name, force=force_reindex)
            cb = await state.workspaces.codebase(project_id)
            # Through the job queue, joining a job already under way for the repository; a
            # client that gives up (a timeout cancels its request) does not stop the job.
            result = await state.workspaces.jobs.run(
                cb.project_id, await cb.named(request), watch=job_progress(ctx)
            )
        if response_format == "markdown":
            return _result(index_markdown(result, cb.project_id, cb.database_name, detail_level))
        return _result(index_json(result, cb.project_id, cb.database_name, detail_level))

    @mcp.tool(annotations={"readOnlyHint": False, "openWorldHint": False})
    async def search_code(
        query: Annotated[
            str,
            Field(
                description="What to find: a description ('where are retries configured') or "
                "an identifier ('parse_config').",
                min_length=1,
                max_length=defaults.MAX_QUERY_CHARS,
            ),
        ],
        ctx: Context,
        project_id: ProjectId = None,
        repository_id: Annotated[
            str | None,
            Field(description="Only this repository (ids from list_repositories)."),
        ] = None,
        file_type: Annotated[
            str | None,
            Field(
                description="Only files with this extension, e.g. 'py'.",
                max_length=defaults.MAX_FILE_TYPE_CHARS,
            ),
        ] = None,
        directory: Annotated[
            str | None,
            Field(
                description="Only files under this path prefix of the repository, e.g. 'src/api'.",
                max_length=defaults.MAX_PATH_CHARS,
            ),
        ] = None,
        language: Annotated[
            str | None,
            Field(
                description="Only this language, e.g. 'python', 'typescript'.",
                max_length=defaults.MAX_LANGUAGE_CHARS,
            ),
        ] = None,
        mode: Annotated[
            Literal["hybrid", "semantic", "lexical"] | None,
            Field(
                description="'hybrid' (the default) fuses meaning and exact terms (lexical "
                "when no embedder is configured or nothing searched has vectors); 'semantic' "
                "meaning only; 'lexical' BM25 over identifiers and words. Repositories indexed "
                "without vectors are ranked lexically and listed in lexical_only_repositories."
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
                description="First bring the searched repositories up to date (incremental, "
                "cheap when nothing changed), so no result is stale.",
                strict=True,
            ),
        ] = False,
        response_format: Format = "json",
        detail_level: Detail = "detailed",
    ) -> ToolResult:
        """Search indexed code by meaning and by exact identifiers.

        Returns ranked chunks with file_path, start_line, end_line, symbol, language,
        similarity_score (0-1), content and 10 lines of context before and after, plus
        total_count (matches before the limit) and latency_ms; lexical_only_repositories
        names repositories ranked lexically because they were indexed without vectors
        (index_repository adds them). While a repository's vectors are being built,
        semantic_coverage gives its vectors of its chunks (with the job and the time left)
        and chunks without a vector are ranked by exact terms; indexing_repositories names
        repositories still being indexed (a message says what the answer may miss). A hit
        whose file changed on disk since it was indexed carries stale: true (search again
        with refresh=true).
        """
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

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def list_repositories(ctx: Context, project_id: ProjectId = None) -> dict[str, Any]:
        """The indexed repositories of a project: id (to filter search_code), name, path,
        file_count, chunk_count, indexed_at (null while a first index runs), embedding_model,
        vector_count and semantic_percent (chunks holding a vector; below 100 while the
        semantic layer is built, with semantic_job_id and semantic_eta_seconds)."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            repos = await cb.repositories()
            layers = await cb.semantic_layers(repos)
        return {
            "repositories": [repository_payload(r, layers.get(r.id)) for r in repos],
            "project_id": cb.project_id,
            "database_name": cb.database_name,
        }

    @mcp.tool(annotations={"destructiveHint": True, "openWorldHint": False})
    async def delete_repository(
        repository_id: Annotated[
            str, Field(description="Id from list_repositories.", min_length=1)
        ],
        ctx: Context,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Remove a repository and all its chunks from the index (the files on disk are not
        touched)."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            repo = await cb.repository(repository_id)
            await cb.delete_repository(repository_id)
        return deleted_payload(repo, cb.project_id)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def list_projects(ctx: Context) -> dict[str, Any]:
        """Every project (workspace) with its database_name (Postgres schema), repositories,
        files, chunks, tasks and size_bytes."""
        state = state_of(ctx)
        with coded():
            projects = await state.workspaces.projects()
        return {"projects": [p.model_dump(mode="json") for p in projects]}
