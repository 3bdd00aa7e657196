"""Plain JSON-serialisable views of results, shared by the CLI and the MCP server."""

from __future__ import annotations

from typing import Any

from codebase_core.models import IndexResult, Repository, SearchResult

# Skipped files listed in a detailed index result: a repository with a large ignored tree
# would otherwise cost a client's context for little use (the counts by reason stay whole).
SKIPPED_LISTED = 200


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
        "files_skipped": dict(result.files_skipped),
        **skipped_payload(result),
        "project_id": project_id,
        "database_name": database_name,
    }


def skipped_payload(result: IndexResult, limit: int = SKIPPED_LISTED) -> dict[str, Any]:
    """What the scan left out, file by file (a directory's path ends with '/'), at most
    ``limit`` of them; ``skipped_not_listed`` counts the rest when there are more."""
    shown = [s.model_dump(mode="json") for s in result.skipped[:limit]]
    payload: dict[str, Any] = {"skipped": shown}
    if len(result.skipped) > limit:
        payload["skipped_not_listed"] = len(result.skipped) - limit
    return payload


def search_payload(result: SearchResult, project_id: str) -> dict[str, Any]:
    return {
        "results": [h.model_dump(mode="json") for h in result.hits],
        "total_count": result.total_count,
        "mode": result.mode.value,
        "latency_ms": result.latency_ms,
        **lexical_only_payload(result),
        "project_id": project_id,
    }


def lexical_only_payload(result: SearchResult) -> dict[str, Any]:
    """``lexical_only_repositories`` when the search ranked some repositories lexically (left
    out otherwise: most results have none, and every token counts)."""
    if not result.lexical_only_repositories:
        return {}
    return {"lexical_only_repositories": list(result.lexical_only_repositories)}


def repository_payload(repo: Repository) -> dict[str, Any]:
    return repo.model_dump(mode="json")


def deleted_payload(repo: Repository, project_id: str) -> dict[str, Any]:
    """What ``delete_repository`` answers: the repository removed, with its counts."""
    return {
        "deleted": True,
        "repository_id": repo.id,
        "name": repo.name,
        "files_deleted": repo.file_count,
        "chunks_deleted": repo.chunk_count,
        "project_id": project_id,
    }
