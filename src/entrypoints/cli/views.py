"""The JSON the CLI prints, with the field names of the MCP tools' responses, and plain text
columns for people.

The search and indexing views are shared with the MCP server (``entrypoints.presenters``);
the repository, project and task responses are built inside the MCP tools, so their shapes
are repeated here (tests/integration/test_cli_agreement.py holds the two to the same fields)
rather than importing the server (fastmcp) into every CLI run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from codebase_mcp_search.core.models import (
    IndexResult,
    ProjectInfo,
    Repository,
    SemanticLayer,
    Task,
    TaskPage,
)
from codebase_mcp_search.entrypoints.presenters import index_payload, repository_payload


def dump(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def index_view(result: IndexResult, project_id: str, database_name: str | None) -> dict[str, Any]:
    """``index_repository``'s detailed JSON, with the skipped files by reason and each one."""
    payload = index_payload(result, project_id, database_name)
    payload.setdefault("files_skipped", dict(result.files_skipped))
    payload.setdefault("skipped", [s.model_dump(mode="json") for s in result.skipped])
    return payload


def repositories_view(
    repos: Sequence[Repository],
    project_id: str,
    database_name: str | None,
    layers: Mapping[str, SemanticLayer],
) -> dict[str, Any]:
    """As ``list_repositories`` (``layers``: each repository's semantic layer, by id)."""
    return {
        "repositories": [repository_payload(r, layers.get(r.id)) for r in repos],
        "project_id": project_id,
        "database_name": database_name,
    }


def repository_view(
    repo: Repository, project_id: str, database_name: str | None, layer: SemanticLayer | None
) -> dict[str, Any]:
    """One repository as ``list_repositories`` shows each, with its project."""
    return {
        **repository_payload(repo, layer),
        "project_id": project_id,
        "database_name": database_name,
    }


def layer_text(layer: SemanticLayer | None) -> str:
    """A repository's vectors in a few characters: ``100%``, ``42% (~40 s)``, ``-`` (none)."""
    if layer is None:
        return "-"
    text = f"{layer.percent:g}%"
    if layer.vectors < layer.chunks:
        if layer.eta_seconds is not None:
            text += f" (~{layer.eta_seconds:.0f} s)"
        elif layer.job_id is not None:
            text += " (queued)"
    return text


def projects_view(projects: Sequence[ProjectInfo]) -> dict[str, Any]:
    """As ``list_projects``."""
    return {"projects": [p.model_dump(mode="json") for p in projects]}


def task_view(task: Task) -> dict[str, Any]:
    """As ``get_task`` / ``create_task`` / ``update_task``."""
    return task.model_dump(mode="json")


SUMMARY_FIELDS = ("id", "title", "status", "created_at", "updated_at")


def tasks_view(page: TaskPage, offset: int, full: bool) -> dict[str, Any]:
    """As ``list_tasks`` (summaries unless ``full``)."""
    tasks = [task_view(t) for t in page.tasks]
    if not full:
        tasks = [{k: t[k] for k in SUMMARY_FIELDS} for t in tasks]
    return {
        "success": True,
        "tasks": tasks,
        "total_count": page.total_count,
        "has_more": offset + len(page.tasks) < page.total_count,
    }


def columns(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces (numbers right-aligned), no colours: the
    same text on a terminal and in a pipe."""
    cells = [[str(c) for c in header]] + [["" if c is None else str(c) for c in r] for r in rows]
    numeric = [all(isinstance(r[i], int) for r in rows) and bool(rows) for i in range(len(header))]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(w) if num else cell.ljust(w)
            for cell, w, num in zip(row, widths, numeric, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def size_text(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def page_footer(offset: int, shown: int, total: int, noun: str) -> str:
    """``1-20 of 45 tasks; --offset 20 for more``: where a listing's page sits."""
    shown_to = offset + shown
    more = f"; --offset {shown_to} for more" if shown_to < total else ""
    return f"{offset + 1}-{shown_to} of {total} {noun}{more}"
