"""Where a project's layers stand, from its repositories and its active jobs: the semantic
job building each repository's vectors, and the repositories a lexical job is indexing."""

from __future__ import annotations

from collections.abc import Sequence

from codebase_mcp_search.core.models import (
    Job,
    JobKind,
    JobStatus,
    SemanticLayer,
    repository_id_for,
)


def with_jobs(layers: Sequence[SemanticLayer], active: Sequence[Job]) -> list[SemanticLayer]:
    """``layers`` with the semantic job building each (its id, and its estimate of the time
    left once it runs), where one is active."""
    building: dict[str, Job] = {}
    for job in active:
        if job.kind is JobKind.SEMANTIC:
            key = repository_id_for(job.repo_path)
            # A running job says more than a queued one.
            if key not in building or job.status is JobStatus.RUNNING:
                building[key] = job
    out: list[SemanticLayer] = []
    for layer in layers:
        found = building.get(layer.repository_id)
        if found is not None:
            update = {"job_id": found.id, "eta_seconds": found.eta_seconds}
            layer = layer.model_copy(update=update)
        out.append(layer)
    return out


def indexing(active: Sequence[Job]) -> list[str]:
    """Names of the repositories a lexical job is indexing (or is queued to)."""
    return sorted({j.repo_name for j in active if j.kind is JobKind.LEXICAL})
