"""``index`` and ``search``: the MCP tools ``index_repository`` and ``search_code``."""

from __future__ import annotations

import asyncio
from collections import Counter

from rich.console import Console
from rich.syntax import Syntax

from codebase_mcp_search.core.errors import RepositoryNotFound
from codebase_mcp_search.core.models import IndexRequest, IndexResult, SearchQuery, SearchResult
from codebase_mcp_search.core.services import RunCounts
from codebase_mcp_search.entrypoints.cli.common import Run, open_project
from codebase_mcp_search.entrypoints.cli.errors import EXIT_ERROR, EXIT_OK
from codebase_mcp_search.entrypoints.cli.jobs import index_background
from codebase_mcp_search.entrypoints.cli.progress import IndexProgress, counted
from codebase_mcp_search.entrypoints.cli.views import dump, index_view
from codebase_mcp_search.entrypoints.codebase import with_vectors
from codebase_mcp_search.entrypoints.facade import Codebase, open_workspaces
from codebase_mcp_search.entrypoints.presenters import layer_progress, search_payload
from codebase_mcp_search.entrypoints.requests import index_request, resolve_repo_path

SNIPPET_LINES = 12
ERRORS_SHOWN = 20


async def _index(
    run: Run, cb: Codebase, request: IndexRequest, *, vectors: bool = True
) -> IndexResult:
    """Both layers of ``request``'s repository, each with its progress: the lexical one, then
    (with ``vectors``) the vectors it left missing. Interrupted (Ctrl-C), it says what is
    kept and how to go on, and stops."""
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
        return await index_background(run)
    # Before the store opens: a typo fails at once.
    request = index_request(a.path, name=a.name, force=a.force, field="path")
    async with open_workspaces(run.settings) as ws:
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


async def search_command(run: Run) -> int:
    a = run.args
    # The search's own rules, checked before the store opens or --index spends time.
    query = SearchQuery.build(
        a.query,
        mode=a.mode,
        limit=a.limit,
        repository_id=a.repository_id,
        file_type=a.file_type,
        directory=a.directory,
        language=a.language,
    )
    refresh = index_request(a.index, field="index") if a.index else None
    repo_root = resolve_repo_path(a.repo, "repo") if a.repo and not a.index else None
    async with open_workspaces(run.settings) as ws:
        # --index writes, so it may create the project (as index does); a search alone not.
        cb = await open_project(ws, a.project, create=refresh is not None)
        repository_id = query.filters.repository_id
        if repo_root is not None:
            found = await cb.repository_for_path(repo_root)
            if found is None:
                raise RepositoryNotFound(
                    f"no repository is indexed at {a.repo}: run "
                    f"'codebase-mcp index {a.repo}' first (or search with --index)"
                )
            repository_id = repository_id or found.id
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
        print_search(result, run.out)
    return EXIT_OK


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
    out.print(
        f"[bold]{result.repository_name}[/] ({result.repository_id}): "
        f"{result.files_indexed} files indexed, {result.files_unchanged} unchanged, "
        f"{result.files_deleted} removed; {result.chunks_created} chunks written, "
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


def print_search(result: SearchResult, out: Console) -> None:
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
            out.print(f"No results for {result.query!r} ({result.mode.value} search).")
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
