"""``codebase-mcp --help`` stays light (issue 35): no pydantic, driver, numpy or MCP
framework is imported before the arguments are parsed; the parser's copies of the core's
enum values agree with the enums."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codebase_mcp_search.core.models import JobStatus, SearchMode, TaskStatus
from codebase_mcp_search.entrypoints.cli import parser

HEAVY = ("fastmcp", "asyncpg", "numpy", "pydantic", "dependency_injector", "pgserver", "httpx")

PROBE = """
import sys
from codebase_mcp_search.entrypoints.cli.main import main
code = main({argv!r})
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
print("imported:", ",".join(heavy), file=sys.stderr)
raise SystemExit(code)
"""


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["search"], ["--version"]])
def test_help_and_usage_errors_import_nothing_heavy(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode in (0, 2), done.stderr
    assert done.stderr.splitlines()[-1] == "imported: "


def test_the_parser_spells_the_core_enums_values() -> None:
    assert tuple(s.value for s in TaskStatus) == parser.TASK_STATUS_VALUES
    assert tuple(s.value for s in JobStatus) == parser.JOB_STATUS_VALUES
    assert tuple(m.value for m in SearchMode) == parser.SEARCH_MODE_VALUES


@pytest.mark.parametrize(
    ("command", "kept"),
    [
        ("search", False),
        ("index", False),
        ("serve", True),
        ("worker", True),
        ("watch", True),
    ],
)
def test_only_lasting_commands_keep_the_store_caches(command: str, kept: bool) -> None:
    """A command that runs once reads nothing twice: the store's caches (and the connection
    listening for changes that keeps them current) would only cost it."""
    from codebase_mcp_search.entrypoints.cli.main import _for_command
    from codebase_mcp_search.entrypoints.settings import Settings

    settings = Settings(store="memory", pg_caches=True)
    assert _for_command(settings, command).pg_caches is kept
    assert settings.pg_caches  # the settings given are left as they were
