"""Response formats of the MCP tools: JSON or Markdown, detailed or concise.

- ``json`` + ``detailed``: the full structure (``entrypoints.presenters``).
- ``json`` + ``concise``: no context lines, content cut to 200 characters at a line boundary,
  scores rounded to 2 decimals; an indexing run reports ``error_count`` instead of the list,
  and ``files_skipped`` (counts by reason) without the ``skipped`` list.
- ``markdown`` + ``detailed``: one section per result with a header, metadata and fenced code
  labelled with the language.
- ``markdown`` + ``concise``: one table row per result.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from codebase_mcp_search.core.models import IndexResult, SearchHit, SearchResult
from codebase_mcp_search.entrypoints.presenters import (
    SKIPPED_LISTED,
    index_payload,
    layer_progress,
    lexical_only_payload,
    partial_payload,
    search_payload,
)

ResponseFormat = Literal["json", "markdown"]
DetailLevel = Literal["detailed", "concise"]

CONCISE_CONTENT_CHARS = 200
_ROW_SNIPPET_CHARS = 80

# Tree-sitter language names that Markdown renderers know by another name.
_FENCE_LABELS = {"c_sharp": "csharp", "tsx": "tsx", "commonlisp": "lisp", "elisp": "elisp"}


def compact_json(data: Any) -> str:
    """JSON without spaces: what a client's model reads, at the fewest tokens."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def cut_at_line(text: str, limit: int = CONCISE_CONTENT_CHARS) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` characters at a line boundary, and the number of lines
    left out. A first line longer than ``limit`` is cut inside the line."""
    if len(text) <= limit:
        return text, 0
    head = text[:limit]
    newline = head.rfind("\n")
    kept = head[:newline] if newline > 0 else head
    total_lines = text.count("\n") + 1
    kept_lines = kept.count("\n") + 1
    return kept, max(total_lines - kept_lines, 1 if newline <= 0 else 0)


def _concise_hit(hit: SearchHit) -> dict[str, Any]:
    content, more = cut_at_line(hit.content)
    out: dict[str, Any] = {
        "repository_id": hit.repository_id,
        "file_path": hit.file_path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "symbol": hit.symbol,
        "language": hit.language,
        "similarity_score": round(hit.similarity_score, 2),
        "content": content,
    }
    if more:
        out["more_lines"] = more
    if hit.stale:
        out["stale"] = True
    return out


LAYERS_NAMED = 3
"""Semantic layers under way that a message names one by one (the rest are counted)."""


def search_message(result: SearchResult) -> str | None:
    """What a search could not yet see, in words (None: it saw everything)."""
    parts: list[str] = []
    # A repository under its first index is not searched yet, but it is not "nothing" either.
    if result.repositories_searched == 0 and not result.indexing_repositories:
        parts.append(
            "Nothing is indexed in this project yet: index_repository (or "
            "start_indexing_background) indexes a repository."
        )
    if result.indexing_repositories:
        names = ", ".join(result.indexing_repositories)
        if result.hits:
            parts.append(f"Still being indexed: {names} (files not yet written are not searched).")
        else:
            parts.append(
                f"No results yet: {names} is still being indexed, and its files become "
                "searchable as they are written; search again in a few seconds."
            )
    layers = result.semantic_coverage
    for layer in layers[:LAYERS_NAMED]:
        how = layer_progress(layer, "no job is building the rest: index_repository resumes it")
        parts.append(
            f"Vectors of {layer.repository}: {layer.vectors}/{layer.chunks} chunks ({how})."
        )
    if len(layers) > LAYERS_NAMED:
        parts.append(f"And {len(layers) - LAYERS_NAMED} more repositories building vectors.")
    if layers:
        parts.append("Chunks without a vector were ranked by exact terms.")
    return " ".join(parts) or None


def index_message(result: IndexResult) -> str | None:
    """What an indexing run left for the semantic layer, in words (None: nothing)."""
    if not result.vectors_missing:
        return None
    head = (
        "Searchable now by exact terms, with ranking. "
        f"{result.vectors_missing} chunks wait for a vector"
    )
    if result.vectors_job_id:
        return (
            f"{head}: job {result.vectors_job_id} builds them in the background (follow it with "
            "get_job_status), and searches use each vector as soon as it is stored."
        )
    return f"{head}: index_repository builds them."


def search_json(result: SearchResult, project_id: str, detail: DetailLevel) -> dict[str, Any]:
    message = search_message(result)
    said = {"message": message} if message else {}
    if detail == "detailed":
        return {**search_payload(result, project_id), **said}
    return {
        "results": [_concise_hit(h) for h in result.hits],
        "total_count": result.total_count,
        "mode": result.mode.value,
        "latency_ms": round(result.latency_ms, 1),
        **lexical_only_payload(result),
        **partial_payload(result),
        **said,
        "project_id": project_id,
    }


def _fence(language: str | None) -> str:
    if not language:
        return ""
    return _FENCE_LABELS.get(language, language)


def _code_block(text: str, language: str | None) -> str:
    # A fence longer than any backtick run inside keeps the block closed where it should be.
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{_fence(language)}\n{text}\n{ticks}"


def _location(hit: SearchHit) -> str:
    return f"{hit.file_path}:{hit.start_line}-{hit.end_line}"


def search_markdown(result: SearchResult, detail: DetailLevel) -> str:
    shown = len(result.hits)
    head = (
        f"# Search: {result.query}\n\n{shown} of {result.total_count} matches · "
        f"{result.mode.value} · {result.latency_ms:.1f} ms"
    )
    if result.lexical_only_repositories:
        names = ", ".join(result.lexical_only_repositories)
        head += (
            f"\n\nRanked lexically (indexed without vectors; index_repository adds them): {names}"
        )
    message = search_message(result)
    if message:
        head += f"\n\n{message}"
    if not result.hits and message:
        return head
    if not result.hits:
        return head + "\n\nNo results."
    if detail == "concise":
        rows = ["| # | location | symbol | score | first line |", "|---|---|---|---|---|"]
        for i, hit in enumerate(result.hits, 1):
            lines = [ln.strip() for ln in hit.content.splitlines() if ln.strip()]
            # The definition's own line says more than a decorator above it.
            first = next((ln for ln in lines if not ln.startswith("@")), lines[0] if lines else "")
            if len(first) > _ROW_SNIPPET_CHARS:
                first = first[: _ROW_SNIPPET_CHARS - 1] + "…"
            stale = " (stale)" if hit.stale else ""
            rows.append(
                f"| {i} | {_cell(_location(hit))}{stale} | {_cell(hit.symbol or '')} | "
                f"{hit.similarity_score:.2f} | {_cell(first)} |"
            )
        return head + "\n\n" + "\n".join(rows)
    sections = [head]
    for i, hit in enumerate(result.hits, 1):
        title = f"## {i}. {_location(hit)}"
        if hit.symbol:
            title += f" · {hit.symbol}" + (f" ({hit.kind})" if hit.kind else "")
        meta = [
            f"score {hit.similarity_score:.3f}",
            hit.language or "text",
            f"repository {hit.repository_id}",
        ]
        if hit.stale:
            meta.append("**stale: the file changed since it was indexed**")
        parts = [title, " · ".join(meta)]
        if hit.context_before:
            parts.append("Before:\n" + _code_block(hit.context_before, hit.language))
        parts.append(_code_block(hit.content, hit.language))
        if hit.context_after:
            parts.append("After:\n" + _code_block(hit.context_after, hit.language))
        if hit.other_locations:
            where = ", ".join(
                f"{o.file_path}:{o.start_line}-{o.end_line}" for o in hit.other_locations
            )
            parts.append(f"Same code also at: {where}")
        sections.append("\n\n".join(parts))
    return "\n\n".join(sections)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def index_json(
    result: IndexResult, project_id: str, database_name: str | None, detail: DetailLevel
) -> dict[str, Any]:
    payload = index_payload(result, project_id, database_name)
    message = index_message(result)
    if message:
        payload["message"] = message
    if detail == "concise":
        payload["error_count"] = len(payload.pop("errors"))
        payload.pop("skipped")
        payload.pop("skipped_not_listed", None)
    return payload


def index_markdown(
    result: IndexResult, project_id: str, database_name: str | None, detail: DetailLevel
) -> str:
    seconds = f"{result.duration_seconds:.2f}"
    message = index_message(result)
    if detail == "concise":
        return (
            "| repository | status | files indexed | unchanged | deleted | chunks | seconds "
            "| errors |\n|---|---|---|---|---|---|---|---|\n"
            f"| {_cell(result.repository_name)} ({result.repository_id}) | "
            f"{result.status.value} | {result.files_indexed} | {result.files_unchanged} | "
            f"{result.files_deleted} | {result.chunks_created} | {seconds} | "
            f"{len(result.errors)} |"
            + (f"\n\nSkipped: {_skipped_counts(result)}" if result.files_skipped else "")
            + (f"\n\n{message}" if message else "")
        )
    where = f"project {project_id}" + (f" (schema {database_name})" if database_name else "")
    lines = [
        f"# Indexed {result.repository_name}: {result.status.value}",
        "",
        f"- repository_id: {result.repository_id}",
        f"- {where}",
        (
            f"- files: {result.files_indexed} indexed, {result.files_unchanged} unchanged, "
            f"{result.files_deleted} deleted"
        ),
        (
            f"- chunks: {result.chunks_created} created, {result.chunks_embedded} embedded, "
            f"{result.embeddings_cached} vectors from the cache, {result.chunks_truncated} truncated"
        ),
        f"- duration: {seconds} s",
        f"- skipped: {_skipped_counts(result) or 'none'}",
    ]
    if message:
        lines += ["", message]
    if result.errors:
        lines += ["", f"## Errors ({len(result.errors)})", ""]
        lines += [f"- `{e.path}`: {e.error}" for e in result.errors]
    if result.skipped:
        lines += ["", f"## Skipped ({len(result.skipped)})", ""]
        lines += [f"- `{s.path}`: {s.reason.value}" for s in result.skipped[:SKIPPED_LISTED]]
        if len(result.skipped) > SKIPPED_LISTED:
            lines.append(f"- ... and {len(result.skipped) - SKIPPED_LISTED} more not listed")
    return "\n".join(lines)


def _skipped_counts(result: IndexResult) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(result.files_skipped.items()))
