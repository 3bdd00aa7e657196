"""The ``codebase-mcp`` command line: everything the MCP tools do, from a shell.

stdout carries data (``--json``: the MCP tool's response); progress, logs and errors go to
stderr. Exit codes: 0 ok, 1 runtime failure, 2 bad input or unknown id, 130 interrupted
(see ``entrypoints.cli.errors``).

Only the parser is imported before the arguments are parsed: ``--help`` and a usage error cost
no more than Python and argparse; each command imports what it runs (``COMMANDS``).
"""

from __future__ import annotations

from codebase_mcp_search.entrypoints.cli import interrupts

# Ctrl-C while these load (a second or two on a busy machine) ends the command as it would
# at any other moment: one line, exit 130.
with interrupts.loading():
    import gc
    import importlib
    import json
    import logging
    import os
    import sys
    from collections.abc import Awaitable, Callable, Sequence
    from typing import TYPE_CHECKING, Any

    from codebase_mcp_search.core.errors import CoreError, ValidationFailed
    from codebase_mcp_search.entrypoints.cli.errors import (
        EXIT_BROKEN_PIPE,
        EXIT_ERROR,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_USAGE,
        error_line,
        exit_code,
    )
    from codebase_mcp_search.entrypoints.cli.parser import build_parser, command_parser

if TYPE_CHECKING:
    from rich.console import Console

    from codebase_mcp_search.entrypoints.cli.common import Run
    from codebase_mcp_search.entrypoints.settings import Settings

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "main"]

# Each command's module (under entrypoints.cli) and function, imported when it runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("code", "index_command"),
    "search": ("code", "search_command"),
    "repos": ("admin", "repos_command"),
    "projects": ("admin", "projects_command"),
    "tasks": ("tasks", "tasks_command"),
    "jobs": ("jobs", "jobs_command"),
    "worker": ("jobs", "worker_command"),
    "watch": ("watch", "watch_command"),
}


def _command(name: str) -> Callable[[Run], Awaitable[int]] | None:
    if name not in COMMANDS:
        return None
    module, function = COMMANDS[name]
    found: Callable[[Run], Awaitable[int]] = getattr(
        importlib.import_module(f"codebase_mcp_search.entrypoints.cli.{module}"), function
    )
    return found


def _settings() -> Settings:
    import pydantic

    from codebase_mcp_search.entrypoints.settings import Settings

    try:
        return Settings()
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        var = "CODEBASE_MCP_" + "_".join(str(p) for p in first["loc"]).upper()
        secret = var.endswith(("_TOKEN", "_KEY"))  # never echo a credential, even a bad one
        shown = "***" if secret else first.get("input")
        raise ValidationFailed(var, shown, first["msg"]) from None


# Commands that run for long and search or read the same things again: they keep what the
# store's caches hold. The others run once and exit.
_LASTING = frozenset({"serve", "worker", "watch"})
# A command's start is mostly imports, which make objects (modules, classes, schemas) that
# live as long as the process: the collector, at CPython's 700, ran about 140 times during a
# search's start, each walking them again (0.05-0.1 s of CPU). A search starts with about
# 100,000 such objects, a hybrid one 150,000; past this many, the young generation is
# collected as usual (a long index makes garbage, most of it freed as it goes).
ONE_SHOT_YOUNG_THRESHOLD = 200_000
# Whether this process runs one command of its own (not ``_LASTING``, not a call from Python):
# it sets the collector as above and ends without the interpreter's teardown (``interrupts``).
_one_shot = False


def _for_command(settings: Settings, command: str | None) -> Settings:
    """``settings`` for ``command``: one that runs once keeps no store caches (nothing it
    reads is asked for again; keeping it would cost a connection listening for changes)."""
    if command in _LASTING or not settings.pg_caches:
        return settings
    return settings.model_copy(update={"pg_caches": False})


def _start_database_early(settings: Settings, workers: int) -> bool:
    """``serve`` and ``index``: the embedded database starts (a fresh one is created) in a
    thread while the command's modules load, so that it is up by the time it is needed. Not
    for a group of server processes: their supervisor is no user of the database. Whether it
    creates the database (a new data directory)."""
    if settings.store == "postgres" and settings.database_url is None and workers == 1:
        from codebase_mcp_search.adapters.postgres.embedded import prestart_embedded

        data = settings.data_dir / "postgres"
        fresh = not (data / "PG_VERSION").exists()
        prestart_embedded(data, settings.pg_idle_seconds)
        return fresh
    return False


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
    watching = report["watching"]
    if not watching["enabled"]:
        out.print("watching  off (CODEBASE_MCP_WATCH=false): indexes change only when re-indexed")
    elif watching["mode"] == "native":
        out.print("watching  on: the file system's change events (native)")
    else:
        out.print("watching  on: polling (periodic rescans)")
        out.print(f"          {watching.get('why')}", markup=False, highlight=False)


async def _run(run: Run) -> int:
    import asyncio

    current = asyncio.current_task()
    if current is not None:
        interrupts.quiet_once_cancelled(current)
    command = _command(run.args.command)
    if command is not None:
        return await command(run)
    from codebase_mcp_search.entrypoints.doctor import diagnose

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


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed on one line
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    global _one_shot
    if args.command not in _LASTING and argv is None:  # a process of its own: see above
        _one_shot = True
        young, middle, old = gc.get_threshold()
        gc.set_threshold(max(young, ONE_SHOT_YOUNG_THRESHOLD), middle, old)
    import asyncio

    from codebase_mcp_search.entrypoints.cli.common import Run

    # Our log lines (the embedder auto chose, retries, truncation) go to stderr while this
    # command runs; stdout stays data.
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    ours = logging.getLogger("codebase_mcp")
    ours.addHandler(handler)
    ours.setLevel(logging.INFO)
    try:
        if args.command == "serve":
            if args.no_watch:
                # In the environment, not only in these settings: the processes of
                # ``--workers N`` read their settings from it.
                os.environ["CODEBASE_MCP_WATCH"] = "false"
            settings = _settings()
            _start_database_early(settings, args.workers)
            from codebase_mcp_search.entrypoints.mcp.transports import (
                serve,  # fastmcp only for the server
            )

            # stdout is the protocol on stdio: nothing else may be printed there.
            serve(settings, args.transport, args.host, args.port, args.workers)
            return EXIT_OK
        settings = _for_command(_settings(), args.command)
        fresh = False
        if args.command == "index" and not args.background:
            # Created and started while the command's modules load: on a new data directory
            # most of a first run's wait before its first batch otherwise.
            fresh = _start_database_early(settings, 1)
        return asyncio.run(_run(Run(args, settings, fresh_store=fresh)))
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
        try:
            code = _main(argv)
        except KeyboardInterrupt:  # between the steps _main guards (parsing, its own handlers)
            interrupts.say_interrupted()
            code = EXIT_INTERRUPTED
        finally:
            if ending:  # Ctrl-C no longer cuts the exit work short (see interrupts)
                interrupts.defer_interrupts()
    except KeyboardInterrupt:
        # It landed in the lines above after the command ended, before the deferral: uncaught,
        # Python would end the process by SIGINT (exit -2) without its exit work.
        interrupts.say_interrupted()
        code = EXIT_INTERRUPTED
        if ending:
            interrupts.defer_interrupts()
    if ending and _one_shot:
        interrupts.exit_quickly(code)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
