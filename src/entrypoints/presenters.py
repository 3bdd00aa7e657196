"""Plain JSON-serialisable views of results, shared by the CLI and the MCP server."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from codebase_mcp_search.adapters.filesystem import GitHead
from codebase_mcp_search.core.models import (
    IndexResult,
    Job,
    JobKind,
    JobStatus,
    Repository,
    SearchResult,
    SemanticLayer,
    VectorResult,
)
from codebase_mcp_search.core.services.watching import WatchState

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
        "vectors_missing": result.vectors_missing,
        **({"vectors_job_id": result.vectors_job_id} if result.vectors_job_id else {}),
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
        **partial_payload(result),
        "project_id": project_id,
    }


def lexical_only_payload(result: SearchResult) -> dict[str, Any]:
    """``lexical_only_repositories`` when the search ranked some repositories lexically (left
    out otherwise: most results have none, and every token counts)."""
    if not result.lexical_only_repositories:
        return {}
    return {"lexical_only_repositories": list(result.lexical_only_repositories)}


def partial_payload(result: SearchResult) -> dict[str, Any]:
    """What a search could not yet see, when there is some (left out otherwise):
    ``semantic_coverage``, the semantic layers still being built, and
    ``indexing_repositories``, those still being indexed."""
    payload: dict[str, Any] = {}
    if result.semantic_coverage:
        payload["semantic_coverage"] = [layer_payload(x) for x in result.semantic_coverage]
    if result.indexing_repositories:
        payload["indexing_repositories"] = list(result.indexing_repositories)
    return payload


def layer_payload(layer: SemanticLayer) -> dict[str, Any]:
    """A semantic layer: its vectors of its chunks, and the job building the rest (if any)."""
    payload: dict[str, Any] = {
        "repository_id": layer.repository_id,
        "repository": layer.repository,
        "vectors": layer.vectors,
        "chunks": layer.chunks,
        "percent": layer.percent,
    }
    if layer.job_id is not None:
        payload["job_id"] = layer.job_id
        payload["eta_seconds"] = layer.eta_seconds
    return payload


def layer_progress(layer: SemanticLayer, resume: str) -> str:
    """How far a semantic layer is, in words: the job building it and the time left, or
    ``resume`` (how to go on, in the interface's own words) when no job builds it."""
    if layer.job_id is None:
        return resume
    if layer.eta_seconds is not None:
        return f"job {layer.job_id}, about {layer.eta_seconds:.0f} s left"
    return f"job {layer.job_id}"


def repository_payload(
    repo: Repository,
    layer: SemanticLayer | None = None,
    *,
    head: GitHead | None = None,
    watching: WatchState | None = None,
) -> dict[str, Any]:
    """A repository, with ``semantic_percent`` (chunks holding a vector, in percent) when it
    is indexed with a model, and the job building the rest while some are missing; its git
    ``branch`` and ``commit`` when it is a git work tree; and, from a server, ``watching``:
    how that server watches it (None: it does not, or watching is off)."""
    payload = repo.model_dump(mode="json")
    if layer is not None:
        payload["semantic_percent"] = layer.percent
        if layer.job_id is not None:
            payload["semantic_job_id"] = layer.job_id
            payload["semantic_eta_seconds"] = layer.eta_seconds
    if head is not None:
        payload["branch"] = head.branch
        payload["commit"] = head.commit
    if watching is not None:
        payload["watching"] = None if watching.mode is None else watching.mode.value
    return payload


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


def job_status_payload(
    job: Job, database_name: str | None, layer: SemanticLayer | None = None
) -> dict[str, Any]:
    """What ``get_job_status`` answers (the reference schema's fields, in its order), then
    ``kind``, ``attempts`` (runs begun: more than one after a crash or a block) and the
    extras: the semantic job a lexical one queued (``vectors_job_id``), a semantic job's
    vectors stored and chunk texts embedded so far, over all its runs (``vectors_stored``,
    ``chunks_embedded``: what ``files_indexed`` and ``chunks_created`` are to a lexical job),
    and where the repository's semantic layer stands (``semantic_coverage``, given
    ``layer``)."""
    extra: dict[str, Any] = {"kind": job.kind.value, "attempts": job.attempts}
    if isinstance(job.result, IndexResult) and job.result.vectors_job_id:
        extra["vectors_job_id"] = job.result.vectors_job_id
    if job.kind is JobKind.SEMANTIC:
        extra["vectors_stored"] = job.vectors_stored
        # A job ended before the counts were kept has them in its result only.
        done = job.result.chunks_embedded if isinstance(job.result, VectorResult) else 0
        extra["chunks_embedded"] = max(job.chunks_embedded, done)
    if layer is not None:
        extra["semantic_coverage"] = layer_payload(layer)
    return {
        "job_id": job.id,
        "status": job.status.value,
        "progress_percentage": job.progress_percentage,
        "progress_message": job.progress_message,
        "files_scanned": job.files_scanned,
        "files_indexed": job.files_indexed,
        "chunks_created": job.chunks_created,
        "created_at": _when(job.created_at),
        "started_at": _when(job.started_at),
        "completed_at": _when(job.completed_at),
        "cancelled_at": _when(job.cancelled_at),
        "error_message": job.error_message,
        "error_type": job.error_type,
        "estimated_time_remaining_seconds": job.eta_seconds,
        "project_id": job.project_id,
        "database_name": database_name,
        **extra,
    }


def job_summary_payload(job: Job) -> dict[str, Any]:
    """One job of ``list_background_jobs``."""
    return {
        "job_id": job.id,
        "kind": job.kind.value,
        "repo_path": job.repo_path,
        "repo_name": job.repo_name,
        "status": job.status.value,
        "progress_percentage": job.progress_percentage,
        "files_indexed": job.files_indexed,
        "chunks_created": job.chunks_created,
        "created_at": _when(job.created_at),
        "started_at": _when(job.started_at),
        "completed_at": _when(job.completed_at),
        "project_id": job.project_id,
    }


MCP_FOLLOW = "follow it with get_job_status, stop it with cancel_job"
MCP_CANCELLED_SHOWN = "get_job_status shows 'cancelled' once it has"


def job_started_payload(
    job: Job, estimate: float | None, database_name: str | None, follow: str = MCP_FOLLOW
) -> dict[str, Any]:
    """What ``start_indexing_background`` answers (``follow``: how to follow and stop the
    job, in the interface's words)."""
    return {
        "job_id": job.id,
        "status": job.status.value,
        "message": f"Indexing of {job.repo_path} queued as job {job.id}: its files are "
        f"searchable as it writes them, then a semantic job builds their vectors; {follow}",
        "estimated_duration_seconds": estimate,
        "project_id": job.project_id,
        "database_name": database_name,
    }


def job_cancel_payload(job: Job, shown: str = MCP_CANCELLED_SHOWN) -> dict[str, Any]:
    """What ``cancel_job`` answers: ``cancelled`` when it ended at once, else ``cancelling``
    (its worker stops at the next batch; files written so far stay consistent). ``shown``:
    where the interface shows the job's end, in its words."""
    ended = job.status is JobStatus.CANCELLED
    return {
        "job_id": job.id,
        "status": "cancelled" if ended else "cancelling",
        "message": f"Job {job.id} cancelled" if ended else f"Job {job.id} is stopping: {shown}",
        "files_indexed": job.files_indexed,
        "chunks_created": job.chunks_created,
        "cancelled_at": _when(job.cancelled_at),
        "project_id": job.project_id,
    }


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
