"""Plain JSON-serialisable views of results, shared by the CLI and the MCP server."""

from __future__ import annotations

from typing import Any

from codebase_core.models import IndexResult, Repository, SearchResult


def index_payload(
    result: IndexResult, project_id: str, database_name: str | None
) -> dict[str, Any]:
    return {
        "repository_id": result.repository_id,
        "repository_name": result.repository_name,
        "files_indexed": result.files_indexed,
        "files_unchanged": result.files_unchanged,
        "files_deleted": result.files_deleted,
        "chunks_created": result.chunks_created,
        "chunks_embedded": result.chunks_embedded,
        "embeddings_cached": result.embeddings_cached,
        "chunks_truncated": result.chunks_truncated,
        "duration_seconds": result.duration_seconds,
        "status": result.status.value,
        "errors": [e.model_dump() for e in result.errors],
        "project_id": project_id,
        "database_name": database_name,
    }


def search_payload(result: SearchResult, project_id: str) -> dict[str, Any]:
    return {
        "results": [h.model_dump(mode="json") for h in result.hits],
        "total_count": result.total_count,
        "mode": result.mode.value,
        "latency_ms": result.latency_ms,
        "project_id": project_id,
    }


def repository_payload(repo: Repository) -> dict[str, Any]:
    return repo.model_dump(mode="json")
