"""The ``codebase-mcp`` command line: everything the MCP tools do, from a shell.

stdout carries data (``--json``: the MCP tool's response); progress, logs and errors go to
stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad input or unknown id, 130 interrupted
(see ``entrypoints.cli.errors``).
"""

from __future__ import annotations

from codebase_mcp_search.entrypoints.cli import interrupts

# Ctrl-C while these load (a second or two on a busy machine) ends the command as it would
# at any other moment: one line, exit 130.
with interrupts.loading():
    import asyncio
    import json
    import logging
    import os
    import sys
    from collections.abc import Awaitable, Callable, Sequence
    from typing import Any

    import pydantic
    from rich.console import Console

    from codebase_mcp_search.core.errors import CoreError, ValidationFailed
    from codebase_mcp_search.entrypoints.cli.admin import projects_command, repos_command
    from codebase_mcp_search.entrypoints.cli.code import index_command, search_command
    from codebase_mcp_search.entrypoints.cli.common import Run
    from codebase_mcp_search.entrypoints.cli.errors import (
        EXIT_BROKEN_PIPE,
        EXIT_ERROR,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_USAGE,
        error_line,
        exit_code,
    )
    from codebase_mcp_search.entrypoints.cli.jobs import jobs_command, worker_command
    from codebase_mcp_search.entrypoints.cli.parser import build_parser, command_parser
    from codebase_mcp_search.entrypoints.cli.tasks import tasks_command
    from codebase_mcp_search.entrypoints.doctor import diagnose
    from codebase_mcp_search.entrypoints.settings import Settings

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "main"]

COMMANDS: dict[str, Callable[[Run], Awaitable[int]]] = {
    "index": index_command,
    "search": search_command,
    "repos": repos_command,
    "projects": projects_command,
    "tasks": tasks_command,
    "jobs": jobs_command,
    "worker": worker_command,
}


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


async def _run(run: Run) -> int:
    current = asyncio.current_task()
    if current is not None:
        interrupts.quiet_once_cancelled(current)
    command = COMMANDS.get(run.args.command)
    if command is not None:
        return await command(run)
    report = await diagnose(run.settings)  # doctor: the only command that loads the embedder
    if run.args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_doctor(report, run.out)
    return EXIT_OK if report["ok"] else EXIT_ERROR


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is now: above the live progress display while it
    runs (it redirects stderr), plainly otherwise."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except OSError:  # logging must never end the command
            self.handleError(record)


class _Output(Console):
    """rich's console, except that a closed stdout ends the command as ``| head`` expects
    (exit 141, below) rather than with rich's own exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed on one line
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    out = _Output(soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    # Our log lines (the embedder auto chose, retries, truncation) go to stderr while this
    # command runs; stdout stays data.
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    ours = logging.getLogger("codebase_mcp")
    ours.addHandler(handler)
    ours.setLevel(logging.INFO)
    try:
        if args.command == "serve":
            from codebase_mcp_search.entrypoints.mcp.transports import (
                serve,  # fastmcp only for the server
            )

            # stdout is the protocol on stdio: nothing else may be printed there.
            serve(_settings(), args.transport, args.host, args.port, args.workers)
            return EXIT_OK
        return asyncio.run(_run(Run(args=args, settings=_settings(), out=out, err=err)))
    except CoreError as e:
        sys.stderr.write(error_line(e, command_parser(parser, args)) + "\n")
        return exit_code(e)
    except KeyboardInterrupt:
        interrupts.say_interrupted()
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (| head): no traceback, no more output
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        ours.removeHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``codebase-mcp`` console script (``argv`` None: this process's
    command line, and the process ends after it; given: a call from Python, which goes on)."""
    ending = argv is None
    if ending:
        interrupts.prepare_exit()
    try:
        return _main(argv)
    except KeyboardInterrupt:  # between the steps _main guards (parsing, its own handlers)
        interrupts.say_interrupted()
        return EXIT_INTERRUPTED
    finally:
        if ending:  # Ctrl-C no longer cuts the exit work short (see interrupts)
            interrupts.defer_interrupts()


if __name__ == "__main__":
    raise SystemExit(main())
