"""The ``codebase-mcp`` command line: index a repository, search it."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

import pydantic
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax

from codebase_core.errors import CoreError, InvalidLimit, RepositoryNotFound, ValidationFailed
from codebase_core.models import (
    DEFAULT_SEARCH_LIMIT,
    IndexResult,
    ProgressPhase,
    SearchMode,
    SearchQuery,
    SearchResult,
)
from codebase_core.services import ProgressCallback
from entrypoints.doctor import diagnose
from entrypoints.facade import Codebase, open_codebase
from entrypoints.presenters import index_payload, search_payload
from entrypoints.settings import DEFAULT_HOST, DEFAULT_PORT, Settings

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

SNIPPET_LINES = 12


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, our exit code, no usage dump
        sys.stderr.write(f"VALIDATION_ERROR: {message} (see: {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="codebase-mcp", description="Semantic code search for AI assistants.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ix = sub.add_parser("index", help="index (or incrementally re-index) a repository")
    ix.add_argument("path", help="repository root directory")
    ix.add_argument("--name", help="display name (default: the directory name)")
    ix.add_argument("--project", help="workspace id (default: CODEBASE_MCP_PROJECT or 'default')")
    ix.add_argument(
        "--force", action="store_true", help="re-chunk every file (cached vectors kept)"
    )
    ix.add_argument(
        "--no-wait",
        action="store_true",
        help="fail with REPOSITORY_BUSY if another process is indexing this repository",
    )
    ix.add_argument("--json", action="store_true", help="print the result as JSON")

    se = sub.add_parser("search", help="search indexed code")
    se.add_argument("query", help="natural-language description or identifier")
    se.add_argument(
        "--index",
        metavar="PATH",
        help="first bring the index of PATH up to date (incremental), then search it",
    )
    se.add_argument("--limit", type=int, default=DEFAULT_SEARCH_LIMIT, help="1-50 (default 10)")
    se.add_argument(
        "--mode",
        choices=[m.value for m in SearchMode],
        help="default: hybrid with an embedder, lexical without",
    )
    se.add_argument("--file-type", help="extension without the dot, e.g. py")
    se.add_argument("--directory", help="path prefix inside the repository, e.g. src/api")
    se.add_argument("--language", help="language name, e.g. python")
    se.add_argument("--repository-id", help="restrict to one repository")
    se.add_argument(
        "--repo", metavar="PATH", help="restrict to the repository indexed at PATH (no re-index)"
    )
    se.add_argument("--project", help="workspace id")
    se.add_argument("--json", action="store_true", help="print the result as JSON")

    dr = sub.add_parser(
        "doctor", help="show the effective store and embedder, and whether each answers"
    )
    dr.add_argument("--json", action="store_true", help="print the report as JSON")

    sv = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    sv.add_argument(
        "--transport",
        choices=["stdio", "http", "sse"],
        default="stdio",
        help="stdio (default), streamable HTTP at /mcp, or the legacy SSE transport at /sse",
    )
    sv.add_argument(
        "--host", default=DEFAULT_HOST, help=f"HTTP/SSE address (default {DEFAULT_HOST})"
    )
    sv.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP/SSE port (default {DEFAULT_PORT})"
    )
    return p


def _progress_bar(console: Console) -> tuple[Progress, ProgressCallback]:
    bar = Progress(
        TextColumn("[bold]{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task_id = bar.add_task("scanning", total=1)

    def update(phase: ProgressPhase, done: int, total: int) -> None:
        bar.update(task_id, description=phase, completed=done, total=max(total, 1))

    return bar, update


async def _index(
    cb: Codebase,
    path: str,
    *,
    name: str | None,
    force: bool,
    quiet: bool,
    err: Console,
    wait: bool = True,
) -> IndexResult:
    told = False

    def say_waiting(phase: ProgressPhase, done: int, total: int) -> None:
        nonlocal told
        if phase == "waiting" and not told:
            told = True
            err.print(
                f"another process is indexing {path}; waiting for it to finish "
                "(--no-wait to fail instead)",
                highlight=False,
            )

    if quiet or not err.is_terminal:
        return await cb.index(path, name=name, force=force, progress=say_waiting, wait=wait)
    bar, update = _progress_bar(err)

    def both(phase: ProgressPhase, done: int, total: int) -> None:
        say_waiting(phase, done, total)
        update(phase, done, total)

    with bar:
        return await cb.index(path, name=name, force=force, progress=both, wait=wait)


def _print_index(result: IndexResult, out: Console) -> None:
    out.print(
        f"[bold]{result.repository_name}[/] ({result.repository_id}): "
        f"{result.files_indexed} files indexed, {result.files_unchanged} unchanged, "
        f"{result.files_deleted} removed; {result.chunks_created} chunks written, "
        f"{result.chunks_embedded} embedded ({result.embeddings_cached} from cache) "
        f"in {result.duration_seconds:.2f}s: [bold]{result.status.value}[/]",
        highlight=False,
    )
    if result.chunks_truncated:
        out.print(
            f"  [yellow]{result.chunks_truncated} chunks[/] were longer than the embedding "
            "model takes: their beginning was embedded (lexical search sees all of them)",
            highlight=False,
        )
    for e in result.errors[:20]:
        out.print(f"  [yellow]skipped[/] {e.path}: {e.error}", highlight=False)
    if len(result.errors) > 20:
        out.print(f"  ... and {len(result.errors) - 20} more", highlight=False)


def _print_search(result: SearchResult, out: Console) -> None:
    if not result.hits:
        out.print(f"No results for {result.query!r} ({result.mode.value} search).")
        return
    out.print(
        f"[dim]{len(result.hits)} of {result.total_count} matching chunks, "
        f"{result.mode.value} search, {result.latency_ms:.1f} ms[/]",
        highlight=False,
    )
    for rank, hit in enumerate(result.hits, start=1):
        label = f" {hit.kind or ''} [bold]{hit.symbol}[/]" if hit.symbol else ""
        out.print(
            f"\n[bold cyan]{rank}.[/] [bold]{hit.file_path}[/]:{hit.start_line}-{hit.end_line}"
            f"{label}  [green]score {hit.similarity_score:.3f}[/]",
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


def _settings() -> Settings:
    try:
        return Settings()
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        var = "CODEBASE_MCP_" + "_".join(str(p) for p in first["loc"]).upper()
        secret = var.endswith(("_TOKEN", "_KEY"))  # never echo a credential, even a bad one
        shown = "***" if secret else first.get("input")
        raise ValidationFailed(var, shown, first["msg"]) from None


def _print_doctor(report: dict[str, Any], out: Console) -> None:
    def mark(ok: bool) -> str:
        return "[green]ok[/]" if ok else "[red]NOT REACHABLE[/]"

    store = report["store"]
    out.print(f"store     {store['kind']} at {store['location']}: {mark(store['reachable'])}")
    if store.get("server"):
        out.print(f"          PostgreSQL {store['server']}, pgvector {store['pgvector']}")
    if store.get("error"):
        out.print(f"          {store['error']}", markup=False, highlight=False)
    emb = report["embedder"]
    chosen = emb["chosen"] if emb["requested"] == emb["chosen"] else f"auto -> {emb['chosen']}"
    out.print(f"embedder  {chosen}: {mark(emb['reachable'])}")
    if emb.get("model"):
        out.print(f"          model {emb['model']}, {emb['dimension']} dimensions")
    elif emb["reachable"]:
        out.print("          none: lexical search only (semantic and hybrid need an embedder)")
    for key in ("reason", "error"):
        if emb.get(key):
            out.print(f"          {emb[key]}", markup=False, highlight=False)


async def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    settings = _settings()
    if args.command == "doctor":
        report = await diagnose(settings)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            _print_doctor(report, out)
        return EXIT_OK if report["ok"] else EXIT_ERROR
    async with open_codebase(settings, project_id=args.project) as cb:
        if args.command == "index":
            indexed = await _index(
                cb,
                args.path,
                name=args.name,
                force=args.force,
                quiet=args.json,
                err=err,
                wait=not args.no_wait,
            )
            if args.json:
                print(json.dumps(index_payload(indexed, cb.project_id, cb.database_name), indent=2))
            else:
                _print_index(indexed, out)
            return EXIT_OK if indexed.status.value != "failed" else EXIT_ERROR

        # The search's own rules, checked before --index spends time on a doomed query.
        SearchQuery.build(
            args.query,
            mode=args.mode,
            limit=args.limit,
            file_type=args.file_type,
            directory=args.directory,
            language=args.language,
        )
        repository_id = args.repository_id
        if args.repo and not args.index:
            found = await cb.repository_for_path(args.repo)
            if found is None:
                raise RepositoryNotFound(
                    f"no repository is indexed at {args.repo}: run "
                    f"'codebase-mcp index {args.repo}' first (or search with --index)"
                )
            repository_id = repository_id or found.id
        if args.index:
            refreshed = await _index(
                cb, args.index, name=None, force=False, quiet=args.json, err=err
            )
            repository_id = repository_id or refreshed.repository_id
            if not args.json:
                _print_index(refreshed, err)
        result = await cb.search(
            args.query,
            mode=args.mode,
            limit=args.limit,
            repository_id=repository_id,
            file_type=args.file_type,
            directory=args.directory,
            language=args.language,
        )
        if args.json:
            print(json.dumps(search_payload(result, cb.project_id), indent=2))
        else:
            _print_search(result, out)
        return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``codebase-mcp`` console script."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed on one line
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    out = Console(soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    # Our log lines (the embedder auto chose, retries, truncation) go to stderr while this
    # command runs; stdout stays data.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    ours = logging.getLogger("codebase_mcp")
    ours.addHandler(handler)
    ours.setLevel(logging.INFO)
    try:
        if args.command == "serve":
            from entrypoints.mcp.server import serve  # fastmcp only for the server

            # stdout is the protocol on stdio: nothing else may be printed there.
            serve(_settings(), args.transport, args.host, args.port)
            return EXIT_OK
        return asyncio.run(_run(args, out, err))
    except (ValidationFailed, InvalidLimit) as e:
        sys.stderr.write(f"{e}\n")
        return EXIT_USAGE
    except CoreError as e:
        sys.stderr.write(f"{e}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        return 130
    finally:
        ours.removeHandler(handler)


if __name__ == "__main__":
    raise SystemExit(main())
