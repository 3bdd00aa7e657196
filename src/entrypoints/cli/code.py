"""``index`` and ``search``: the MCP tools ``index_repository`` and ``search_code``."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
from collections import Counter
from typing import TYPE_CHECKING

from codebase_mcp_search.core.errors import RepositoryNotFound, ValidationFailed
from codebase_mcp_search.core.models import IndexRequest, IndexResult, SearchQuery, SearchResult
from codebase_mcp_search.core.models.text import path_in_directory, relative_inside
from codebase_mcp_search.core.services import RunCounts
from codebase_mcp_search.entrypoints.cli.common import Run, open_project
from codebase_mcp_search.entrypoints.cli.errors import EXIT_ERROR, EXIT_OK
from codebase_mcp_search.entrypoints.cli.views import dump, index_view
from codebase_mcp_search.entrypoints.codebase import with_vectors
from codebase_mcp_search.entrypoints.facade import Codebase, open_workspaces
from codebase_mcp_search.entrypoints.presenters import layer_progress, search_payload
from codebase_mcp_search.entrypoints.requests import index_request, resolve_repo_path

if TYPE_CHECKING:
    from rich.console import Console

# The progress display, the job commands and syntax highlighting are imported where used: a
# search as a whole process is mostly imports, and most searches need none of them.

SNIPPET_LINES = 12
ERRORS_SHOWN = 20


async def _index(
    run: Run, cb: Codebase, request: IndexRequest, *, vectors: bool = True
) -> IndexResult:
    """Both layers of ``request``'s repository, each with its progress: the lexical one, then
    (with ``vectors``) the vectors it left missing. Interrupted (Ctrl-C), it says what is
    kept and how to go on, and stops."""
    from codebase_mcp_search.entrypoints.cli.progress import IndexProgress, counted

    a = run.args
    wait = not getattr(a, "no_wait", False)
    written = RunCounts()
    try:
        with IndexProgress(run.err, request.root, quiet=a.quiet) as progress:
            result = await cb.index(
                request, progress=progress.callback, wait=wait, vectors=False, counts=written
            )
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Each batch of files is written in one step: those written stay, and the next run
        # finds them unchanged.
        done = (
            f"{written.files_written} of {counted(written.files_to_index, 'files')} were "
            "written and are kept (searchable by exact terms)"
            if written.files_to_index
            else "no file was written yet"
        )
        run.err.print(
            f"stopped: {done}; 'codebase-mcp index {request.root}' indexes the rest",
            highlight=False,
            markup=False,
        )
        raise
    missing = result.vectors_missing
    if not (vectors and missing):
        return result
    if not a.quiet:
        run.err.print(
            f"{result.repository_name} is searchable now (exact terms, ranked); embedding "
            f"{counted(missing, 'chunks')} for search by meaning (Ctrl-C keeps what is done)",
            highlight=False,
            markup=False,
        )
    counts = RunCounts()
    progress = IndexProgress(run.err, request.root, quiet=a.quiet, announce=False)
    try:
        with progress:
            built = await cb.build_vectors(
                request, progress=progress.callback, wait=wait, counts=counts
            )
    except (asyncio.CancelledError, KeyboardInterrupt):
        run.err.print(
            f"stopped: {counts.vectors_stored} of {missing} vectors were stored and are kept; "
            f"search works meanwhile (exact terms for the rest). 'codebase-mcp index "
            f"{request.root}' embeds the rest, or --background leaves it to a worker",
            highlight=False,
            markup=False,
        )
        raise
    return with_vectors(result, built)


async def index_command(run: Run) -> int:
    a = run.args
    if a.background:
        from codebase_mcp_search.entrypoints.cli.jobs import index_background

        return await index_background(run)
    # Before the store opens: a typo fails at once.
    request = index_request(a.path, name=a.name, force=a.force, field="path")
    async with (
        open_workspaces(run.settings) as ws,
        ws.index_ahead(a.project, request.root, run.fresh_store),
    ):
        cb = await open_project(ws, a.project, create=True)
        result = await _index(run, cb, request, vectors=not a.lexical_first)
        if a.lexical_first and result.vectors_missing and run.settings.store != "memory":
            # A worker builds them (a server's, or 'codebase-mcp worker'); else the next run.
            job_id = await cb.queue_vectors(await cb.named(request))
            result = result.model_copy(update={"vectors_job_id": job_id})
    if a.json:
        dump(index_view(result, cb.project_id, cb.database_name))
    else:
        print_index(result, run.out, verbose=a.verbose)
    return EXIT_OK if result.status.value != "failed" else EXIT_ERROR


def _directory_arg(directory: str | None) -> str | None:
    """An absolute ``--directory`` resolved as the repositories' roots are (symlinks, ``~``);
    a relative one is relative to the repository's root, as typed."""
    if directory is None:
        return None
    expanded = os.path.expanduser(directory)
    return os.path.realpath(expanded) if os.path.isabs(expanded) else directory


def _narrower(repo_dir: str, query: SearchQuery, root: str, a: argparse.Namespace) -> str:
    """Of ``--repo``'s folder and ``--directory`` (both relative to ``root``), the one inside
    the other; ``VALIDATION_ERROR`` when they do not overlap."""
    given = query.filters.directory
    if query.within is not None:
        given = relative_inside(query.within, root)
        if given is None:
            raise ValidationFailed("directory", a.directory, f"is not inside {root}")
    if given is None or path_in_directory(given, repo_dir):
        return given or repo_dir
    if path_in_directory(repo_dir, given):
        return repo_dir
    raise ValidationFailed("directory", a.directory, f"is not inside --repo {a.repo}")


async def _with_repo(cb: Codebase, query: SearchQuery, a: argparse.Namespace) -> SearchQuery:
    """``query`` limited to ``--repo``: the repository indexed at that path, or the one whose
    root holds it (searched in that folder only: indexing the folder would make a second,
    overlapping repository)."""
    root = resolve_repo_path(a.repo, "repo")
    found = await cb.repository_for_path(root)
    directory = query.filters.directory
    within = query.within
    if found is None:
        holding = [
            (rel, r)
            for r in await cb.repositories()
            if (rel := relative_inside(root, r.path)) is not None
        ]
        if not holding:
            raise RepositoryNotFound(
                f"no repository is indexed at {a.repo} or above it: run "
                f"'codebase-mcp index {a.repo}' first (or search with --index)"
            )
        rel, found = min(holding, key=lambda h: len(h[0]))  # the innermost root
        directory, within = _narrower(rel, query, found.path, a), None
    if query.filters.repository_id not in (None, found.id):
        raise ValidationFailed(
            "repository_id",
            query.filters.repository_id,
            f"is not the repository of --repo {a.repo} ({found.id})",
        )
    filters = query.filters.model_copy(
        update={"repository_id": found.id, "directory": directory or None}
    )
    return query.model_copy(update={"filters": filters, "within": within})


def _filters_text(a: argparse.Namespace) -> str:
    """The search's filters as typed: ``--language python, --directory src``."""
    given = [
        (flag, getattr(a, dest))
        for flag, dest in (
            ("--repo", "repo"),
            ("--repository-id", "repository_id"),
            ("--directory", "directory"),
            ("--file-type", "file_type"),
            ("--language", "language"),
        )
        if getattr(a, dest)
    ]
    return ", ".join(f"{flag} {shlex.quote(value)}" for flag, value in given)


async def search_command(run: Run) -> int:
    a = run.args
    # The search's own rules, checked before the store opens or --index spends time.
    query = SearchQuery.build(
        a.query,
        mode=a.mode,
        limit=a.limit,
        repository_id=a.repository_id,
        file_type=a.file_type,
        directory=_directory_arg(a.directory),
        language=a.language,
    )
    refresh = index_request(a.index, field="index") if a.index else None
    if a.repo and not a.index:
        resolve_repo_path(a.repo, "repo")  # a typo fails before the store opens
    async with open_workspaces(run.settings) as ws:
        # --index writes, so it may create the project (as index does); a search alone not.
        cb = await open_project(ws, a.project, create=refresh is not None)
        if a.repo and not a.index:
            query = await _with_repo(cb, query, a)
        repository_id = query.filters.repository_id
        if refresh is not None:
            if repository_id is not None:  # REPOSITORY_NOT_FOUND before the run, not after
                await cb.repository(repository_id)
            refreshed = await _index(run, cb, refresh)
            repository_id = repository_id or refreshed.repository_id
            if not a.json:
                print_index(refreshed, run.err)
        if repository_id != query.filters.repository_id:
            filters = query.filters.model_copy(update={"repository_id": repository_id})
            query = query.model_copy(update={"filters": filters})
        result = await cb.search(query)
    if a.json:
        payload = search_payload(result, cb.project_id)
        if result.lexical_only_repositories:
            payload.setdefault("lexical_only_repositories", result.lexical_only_repositories)
        dump(payload)
    else:
        print_search(result, run.out, empty=_empty_line(result, cb.project_id, a))
    return EXIT_OK


def _empty_line(result: SearchResult, project_id: str, a: argparse.Namespace) -> str:
    """What a search that found nothing says: that nothing is indexed (and how to index),
    which filters matched nothing, or that the query did."""
    nothing = result.repositories_searched == 0 and not result.indexing_repositories
    if nothing and not (a.repo or a.repository_id):
        return (
            f"Nothing is indexed in project {project_id!r} yet: 'codebase-mcp index PATH' "
            "indexes a repository (or search with --index PATH)"
        )
    filters = _filters_text(a)
    where = f" with {filters}" if filters else ""
    return f"No results for {result.query!r}{where} ({result.mode.value} search)."


def skipped_line(result: IndexResult) -> str | None:
    """``skipped 12 files: 7 ignored, 3 binary, 2 too_large`` (directories counted apart)."""
    counts = Counter({k: v for k, v in result.files_skipped.items() if v})
    total = sum(counts.values())
    if not total:
        return None
    dirs = sum(1 for s in result.skipped if s.path.endswith("/"))
    files = total - dirs
    what = [f"{files} file" + ("s" if files != 1 else "")] if files else []
    if dirs:
        what.append(f"{dirs} director" + ("ies" if dirs != 1 else "y"))
    reasons = ", ".join(f"{n} {reason}" for reason, n in counts.most_common())
    return f"skipped {' and '.join(what)}: {reasons}"


def print_index(result: IndexResult, out: Console, *, verbose: bool = False) -> None:
    from codebase_mcp_search.entrypoints.cli.progress import counted

    out.print(
        f"[bold]{result.repository_name}[/] ({result.repository_id}): "
        f"{counted(result.files_indexed, 'files')} indexed, {result.files_unchanged} unchanged, "
        f"{result.files_deleted} removed; {counted(result.chunks_created, 'chunks')} written, "
        f"{result.chunks_embedded} embedded ({result.embeddings_cached} from cache) "
        f"in {result.duration_seconds:.2f}s: [bold]{result.status.value}[/]",
        highlight=False,
    )
    if result.vectors_missing:
        how = (
            f"job {result.vectors_job_id} builds them (a running 'codebase-mcp serve' or "
            "'codebase-mcp worker' runs it)"
            if result.vectors_job_id
            else "the next 'codebase-mcp index' of it builds them"
        )
        out.print(
            f"  {result.vectors_missing} chunks wait for a vector: {how}; search works "
            "meanwhile (exact terms for those)",
            highlight=False,
            markup=False,
        )
    skipped = skipped_line(result)
    if skipped:
        hint = "" if verbose or not result.skipped else " (--verbose lists them)"
        out.print(f"  {skipped}{hint}", highlight=False, markup=False)
    if verbose:
        for s in sorted(result.skipped, key=lambda s: (s.reason.value, s.path)):
            out.print(f"    {s.reason.value:<12} {s.path}", highlight=False, markup=False)
    if result.chunks_truncated:
        out.print(
            f"  [yellow]{result.chunks_truncated} chunks[/] were longer than the embedding "
            "model takes: their beginning was embedded (lexical search sees all of them)",
            highlight=False,
        )
    shown = result.errors if verbose else result.errors[:ERRORS_SHOWN]
    for e in shown:
        out.print(f"  [yellow]failed[/] {e.path}: {e.error}", highlight=False)
    if len(result.errors) > len(shown):
        out.print(
            f"  ... and {len(result.errors) - len(shown)} more (--verbose lists them)",
            highlight=False,
        )


def partial_lines(result: SearchResult) -> list[str]:
    """What a search could not yet see, in the CLI's words (none: it saw everything)."""
    lines: list[str] = []
    if result.indexing_repositories:
        names = ", ".join(result.indexing_repositories)
        if result.hits:
            lines.append(f"still being indexed: {names} (files not yet written are not searched)")
        else:
            lines.append(
                f"No results yet for {result.query!r}: {names} is still being indexed, and "
                "its files become searchable as they are written; search again in a few seconds"
            )
    for layer in result.semantic_coverage:
        how = layer_progress(
            layer, "none is being built: 'codebase-mcp index PATH' builds the rest"
        )
        lines.append(
            f"vectors of {layer.repository}: {layer.vectors}/{layer.chunks} chunks ({how}); "
            "chunks without one were ranked by exact terms"
        )
    return lines


def print_search(result: SearchResult, out: Console, *, empty: str | None = None) -> None:
    """The hits, or ``empty`` (default: 'No results for ...') when there are none."""
    if result.lexical_only_repositories:
        out.print(
            "[yellow]searched lexically[/] (indexed without vectors): "
            f"{', '.join(result.lexical_only_repositories)}; re-index them with "
            "'codebase-mcp index PATH' to add their vectors",
            highlight=False,
        )
    for line in partial_lines(result):
        out.print(line, highlight=False, markup=False)
    if not result.hits:
        if not result.indexing_repositories:
            line = empty or f"No results for {result.query!r} ({result.mode.value} search)."
            out.print(line, highlight=False, markup=False)
        return
    out.print(
        f"[dim]{len(result.hits)} of {result.total_count} matching chunks, "
        f"{result.mode.value} search, {result.latency_ms:.1f} ms[/]",
        highlight=False,
    )
    for rank, hit in enumerate(result.hits, start=1):
        label = f" {hit.kind or ''} [bold]{hit.symbol}[/]" if hit.symbol else ""
        stale = " [yellow](stale: changed since indexed)[/]" if hit.stale else ""
        out.print(
            f"\n[bold cyan]{rank}.[/] [bold]{hit.file_path}[/]:{hit.start_line}-{hit.end_line}"
            f"{label}  [green]score {hit.similarity_score:.3f}[/]{stale}",
            highlight=False,
        )
        for loc in hit.other_locations[:3]:
            out.print(f"   [dim]same code in {loc.file_path}:{loc.start_line}[/]", highlight=False)
        lines = hit.content.splitlines()
        shown = lines[:SNIPPET_LINES]
        if out.is_terminal:
            from rich.syntax import Syntax

            out.print(
                Syntax(
                    "\n".join(shown),
                    hit.language or "text",
                    line_numbers=True,
                    start_line=hit.start_line,
                    theme="ansi_dark",
                    background_color="default",
                    word_wrap=True,
                )
            )
        else:
            width = len(str(hit.start_line + len(shown)))
            for n, line in enumerate(shown, start=hit.start_line):
                out.print(f"  {n:>{width}} | {line}", highlight=False, markup=False)
        if len(lines) > SNIPPET_LINES:
            out.print(f"   [dim]... {len(lines) - SNIPPET_LINES} more lines[/]", highlight=False)
