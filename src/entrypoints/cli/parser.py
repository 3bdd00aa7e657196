"""The ``codebase-mcp`` command line's arguments: one sub-command per MCP tool, and more.

Light on purpose: ``--help`` and a usage error import this and no more (no pydantic, no
database driver), so the values of the core's enums are spelled here; a unit test checks
them against the enums.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from codebase_mcp_search.core.defaults import (
    DEFAULT_HOST,
    DEFAULT_JOB_PAGE,
    DEFAULT_PORT,
    DEFAULT_SEARCH_LIMIT,
    DEFAULT_TASK_PAGE,
    MAX_JOB_PAGE,
    MAX_SEARCH_LIMIT,
    MAX_TASK_PAGE,
)
from codebase_mcp_search.entrypoints.cli.errors import EXIT_USAGE

# The values of core.models' TaskStatus, JobStatus and SearchMode (tests/unit/test_cli_light.py).
TASK_STATUS_VALUES = ("need to be done", "in-progress", "complete")
JOB_STATUS_VALUES = ("pending", "running", "blocked", "completed", "failed", "cancelled")
SEARCH_MODE_VALUES = ("hybrid", "semantic", "lexical")

PROJECT_HELP = "workspace id (default: CODEBASE_MCP_PROJECT or 'default')"
STATUSES = ", ".join(repr(s) for s in TASK_STATUS_VALUES)
JOB_STATUSES = ", ".join(JOB_STATUS_VALUES)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, our exit code, no usage dump
        sys.stderr.write(f"VALIDATION_ERROR: {message} (see: {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


class _Version(argparse.Action):
    """argparse's ``version`` action, with the version read only when asked for (reading the
    package's metadata costs more than the rest of ``--help``)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help")
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        from codebase_mcp_search.entrypoints.about import package_version

        sys.stdout.write(f"codebase-mcp {package_version()}\n")
        parser.exit()


NO_WATCH_HELP = (
    "do not watch the repositories for changes (watching re-indexes what changes within "
    "seconds; also CODEBASE_MCP_WATCH=false)"
)


def _common(p: argparse.ArgumentParser, *, project: bool = True, group: bool = False) -> None:
    """``--project`` and ``--json``. On a group (``repos``) and its actions (``repos list``)
    alike: defaults come from the group (``set_defaults``), so an action's own defaults never
    undo ``repos --json list``."""
    default = argparse.SUPPRESS if group else None
    if project:
        p.add_argument("--project", default=default, help=PROJECT_HELP)
    p.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if group else False,
        help="print the MCP tool's response (same field names)",
    )


def _code(sub: Any) -> None:
    ix = sub.add_parser("index", help="index (or incrementally re-index) a repository")
    ix.add_argument("path", help="repository root directory")
    ix.add_argument(
        "--name",
        help="display name, not blank (default: the repository's own, else the directory's)",
    )
    ix.add_argument(
        "--force", action="store_true", help="re-chunk every file (cached vectors kept)"
    )
    ix.add_argument(
        "--no-wait",
        action="store_true",
        help="fail with REPOSITORY_BUSY if another process is indexing this repository",
    )
    ix.add_argument(
        "--lexical-first",
        action="store_true",
        help="return as soon as search works (exact terms, ranked); the vectors are left to "
        "a worker ('codebase-mcp serve' or 'codebase-mcp worker') or the next index run",
    )
    ix.add_argument(
        "--background",
        action="store_true",
        help="queue a job and return its id at once (a server or 'codebase-mcp worker' runs it)",
    )
    ix.add_argument("-v", "--verbose", action="store_true", help="list each file skipped and why")
    ix.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    _common(ix)

    se = sub.add_parser("search", help="search indexed code")
    se.add_argument("query", help="natural-language description or identifier")
    se.add_argument(
        "--index",
        metavar="PATH",
        help="first bring the index of PATH up to date (incremental), then search it",
    )
    se.add_argument(
        "--limit", type=int, help=f"1-{MAX_SEARCH_LIMIT} (default {DEFAULT_SEARCH_LIMIT})"
    )
    se.add_argument(
        "--mode",
        choices=list(SEARCH_MODE_VALUES),
        help="default: hybrid with an embedder, lexical without (lexical never loads a model)",
    )
    se.add_argument("--file-type", help="extension without the dot, e.g. py")
    se.add_argument("--directory", help="path prefix inside the repository, e.g. src/api")
    se.add_argument("--language", help="language name, e.g. python")
    se.add_argument("--repository-id", help="restrict to one repository (ids: repos list)")
    se.add_argument(
        "--repo", metavar="PATH", help="restrict to the repository indexed at PATH (no re-index)"
    )
    se.add_argument("-q", "--quiet", action="store_true", help="no --index progress on stderr")
    _common(se)


def _repos(sub: Any) -> None:
    rp = sub.add_parser("repos", help="indexed repositories: list (default), get, delete")
    rp.set_defaults(action="list", project=None, json=False)
    _common(rp, group=True)
    acts = rp.add_subparsers(dest="action", parser_class=Parser)
    _common(acts.add_parser("list", help="every repository of the project"), group=True)
    get = acts.add_parser("get", help="one repository")
    get.add_argument("repository_id", metavar="ID")
    _common(get, group=True)
    rm = acts.add_parser("delete", help="remove a repository's index (files are not touched)")
    rm.add_argument("repository_id", metavar="ID")
    _common(rm, group=True)

    pj = sub.add_parser("projects", help="every project (workspace) with its sizes")
    pj.set_defaults(action="list", json=False)
    _common(pj, project=False, group=True)
    pacts = pj.add_subparsers(dest="action", parser_class=Parser)
    _common(
        pacts.add_parser("list", help="every project with its sizes"), project=False, group=True
    )


def _tasks(sub: Any) -> None:
    tk = sub.add_parser("tasks", help="development tasks: list (default), get, create, update")
    tk.set_defaults(
        action="list", project=None, json=False, status=None, branch=None, limit=None, offset=None
    )
    tk.set_defaults(full=False)
    _common(tk, group=True)
    acts = tk.add_subparsers(dest="action", parser_class=Parser)

    ls = acts.add_parser("list", help="tasks newest first")
    ls.add_argument("--status", help=f"only this status: {STATUSES}")
    ls.add_argument("--branch", help="only tasks linked to this git branch")
    ls.add_argument("--limit", type=int, help=f"1-{MAX_TASK_PAGE} (default {DEFAULT_TASK_PAGE})")
    ls.add_argument("--offset", type=int, help="tasks to skip (default 0)")
    ls.add_argument(
        "--full", action="store_true", help="full tasks instead of id, title, status, dates"
    )
    _common(ls, group=True)

    get = acts.add_parser("get", help="one task in full")
    get.add_argument("task_id", metavar="ID")
    _common(get, group=True)

    new = acts.add_parser("create", help="a new task (status 'need to be done')")
    new.add_argument("title", help="a short summary (1-200 characters)")
    new.add_argument("--description", help="what to do and why (at most 2,000 characters)")
    new.add_argument("--notes", help="working notes (at most 5,000 characters)")
    new.add_argument(
        "--ref",
        action="append",
        help="a path or URL of a plan or spec this task follows (repeat: at most 10)",
    )
    _common(new, group=True)

    up = acts.add_parser("update", help="change some fields of a task")
    up.add_argument("task_id", metavar="ID")
    up.add_argument("--title")
    up.add_argument("--description")
    up.add_argument("--notes")
    up.add_argument("--status", help=STATUSES + " ('pending' and 'completed' are aliases)")
    up.add_argument("--branch", help="a git branch to add to the task's branches")
    up.add_argument("--commit", help="a commit SHA to add (40 lowercase hex characters)")
    _common(up, group=True)


def _jobs(sub: Any) -> None:
    jb = sub.add_parser("jobs", help="background indexing jobs: list (default), status, cancel")
    jb.set_defaults(action="list", project=None, json=False, status=None, limit=None, offset=None)
    _common(jb, group=True)
    acts = jb.add_subparsers(dest="action", parser_class=Parser)
    ls = acts.add_parser("list", help="jobs of the project, newest first")
    ls.add_argument("--status", help=f"only this status: {JOB_STATUSES}")
    ls.add_argument("--limit", type=int, help=f"1-{MAX_JOB_PAGE} (default {DEFAULT_JOB_PAGE})")
    ls.add_argument("--offset", type=int, help="jobs to skip (default 0)")
    _common(ls, group=True)
    st = acts.add_parser("status", help="one job's progress")
    st.add_argument("job_id", metavar="ID")
    _common(st, group=True)
    cn = acts.add_parser("cancel", help="stop a job (what it indexed stays searchable)")
    cn.add_argument("job_id", metavar="ID")
    _common(cn, group=True)

    wk = sub.add_parser(
        "worker", help="run background jobs with no MCP server (several may share a database)"
    )
    wk.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="jobs run at once (default: CODEBASE_MCP_MAX_CONCURRENT_JOBS or 3)",
    )
    wk.add_argument("--no-watch", action="store_true", help=NO_WATCH_HELP)

    wa = sub.add_parser(
        "watch",
        help="keep indexes fresh with no MCP server: index what changes, as it changes",
    )
    wa.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="repository roots to watch, indexed first if they are not yet (default: every "
        "indexed repository of every project)",
    )
    wa.add_argument("--project", default=None, help=PROJECT_HELP)


def build_parser() -> Parser:
    p = Parser(prog="codebase-mcp", description="Semantic code search for AI assistants.")
    p.add_argument("--version", action=_Version, help="show program's version number and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    _code(sub)
    _repos(sub)
    _tasks(sub)
    _jobs(sub)

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
    sv.add_argument(
        "--workers",
        type=int,
        default=1,
        help="HTTP server processes sharing the port (default 1); more than one serves "
        "stateless HTTP with JSON responses, without progress notifications",
    )
    sv.add_argument("--no-watch", action="store_true", help=NO_WATCH_HELP)
    return p


def command_parser(root: argparse.ArgumentParser, args: argparse.Namespace) -> Parser | None:
    """The parser of the command ``args`` ran (``tasks update``), to name its flags in errors."""
    names = [args.command]
    if "action" in args:
        names.append(args.action or "list")
    parser: argparse.ArgumentParser = root
    for name in names:
        found = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found = action.choices.get(name)
        if found is None:
            break
        parser = found
    return parser if isinstance(parser, Parser) else None
