"""Session-wide test infrastructure: a real Postgres with pgvector for every test that asks.

Where the server comes from, in order: ``CODEBASE_MCP_TEST_DATABASE_URL`` or ``DATABASE_URL``;
testcontainers' pgvector image when a Docker engine answers; else the embedded ``pgserver`` in
a temporary directory (what CI uses on machines without Docker). Tests that never ask for
``pg_url`` never start a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pg_watchdog

# The fast tier's integration tests (scripts/test.sh --fast): one per adapter and entry point,
# beside every unit and contract test. Kept here, by node id, rather than as a marker in the
# files, and checked: a test renamed or removed fails the fast tier instead of leaving it.
FAST_INTEGRATION = frozenset(
    {
        # entry points: the console script, the MCP server over stdio and over HTTP, its
        # tools in process, the library, the background worker
        "test_cli.py::test_console_script_end_to_end",
        "test_mcp_transports.py::test_stdio_with_the_official_sdk_client",
        "test_mcp_transports.py::test_http_health_token_and_tools",
        "test_mcp_server.py::test_index_with_progress_then_search",
        "test_library.py::test_index_search_and_reindex",
        "test_cli_jobs.py::test_background_index_jobs_and_a_worker",
        # adapters beyond the contract suites: the embedded server across processes, the
        # default model from the plain install and a hub model from the cache, an HTTP embedder
        "test_postgres_embedded.py::test_embedded_server_persists_across_processes",
        "test_onnx_embedder.py::test_the_builtin_model_needs_no_hub_extra",
        "test_onnx_embedder.py::test_a_hub_model_loads_from_the_local_cache_offline",
        "test_http_embedders.py::test_ollama_batches_with_prefixes_and_learns_the_dimension",
        # this harness: a killed run leaves no server behind
        "test_killed_run.py::test_a_killed_run_leaves_no_server_and_no_folder[SIGKILL]",
    }
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="the fast tier (scripts/test.sh --fast): unit and contract tests but those marked "
        "slow or torch, and the integration tests of tests/conftest.py's FAST_INTEGRATION",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--fast"):
        return
    integration = Path(__file__).parent / "integration"
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    seen: set[str] = set()
    for item in items:
        if integration in item.path.parents:
            name = f"{item.path.name}::{item.name}"
            seen.add(name)
            chosen = name in FAST_INTEGRATION
        else:
            chosen = not item.get_closest_marker("slow")
        (keep if chosen and not item.get_closest_marker("torch") else drop).append(item)
    # Whole runs of the integration tests (not one file or test) must find every one chosen.
    ran = [Path(a.split("::")[0]).resolve() for a in config.args]
    if any(p == integration or p in integration.parents for p in ran):
        gone = FAST_INTEGRATION - seen
        if gone and not config.getoption("-k") and not config.getoption("-m"):
            raise pytest.UsageError(f"tests/conftest.py FAST_INTEGRATION names no test: {gone}")
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _docker_answers() -> bool:
    """Ping the Docker engine's socket ourselves (docker.from_env() leaks it when down)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return False
    path = host.removeprefix("unix://")
    if not Path(path).exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        try:
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in s.recv(1024)
        except OSError:
            return False


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A URL of a Postgres server with the vector extension available."""
    url = os.environ.get("CODEBASE_MCP_TEST_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.community.postgres import PostgresContainer  # pragma: no cover

        with PostgresContainer("pgvector/pgvector:pg16", driver=None) as pg:  # pragma: no cover
            yield pg.get_connection_url()
        return  # pragma: no cover
    from codebase_mcp_search.adapters.postgres.embedded import _start

    base = Path(tempfile.gettempdir())
    pg_watchdog.reap_stale(base)  # what runs killed before their watchdog could act left
    tmp = Path(tempfile.mkdtemp(prefix=pg_watchdog.folder_name(os.getpid()), dir=base))
    # Stops the server and removes the folder if this process dies without its teardown
    # (SIGTERM, SIGKILL): see tests/pg_watchdog.py.
    watchdog = subprocess.Popen(
        [sys.executable, pg_watchdog.__file__, str(tmp), str(tmp / "pgdata")],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield _start(tmp / "pgdata")
    finally:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        with contextlib.suppress(Exception):
            stop_embedded(tmp / "pgdata")
        shutil.rmtree(tmp, ignore_errors=True)
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # the watchdog finds nothing left to do, and exits
        watchdog.wait()


@pytest.fixture(autouse=True)
def _explicit_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their embedder: ``auto`` would take whatever this machine offers (a running
    Ollama, the local model). Tests of ``auto`` itself set the variable again."""
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "none")


@pytest.fixture(autouse=True)
def _no_idle_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's embedded servers stop with their last user, as the test's own cleanup expects
    (no server of a finished test is left up for the default idle period). Tests of the idle
    period set it again."""
    monkeypatch.setenv("CODEBASE_MCP_PG_IDLE_SECONDS", "0")


@pytest.fixture(autouse=True)
def _own_job_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's servers and workers share a job queue of their own: a job a test leaves
    behind in the shared test database is never taken up by the next test's worker."""
    monkeypatch.setenv("CODEBASE_MCP_JOB_QUEUE", f"test-{uuid.uuid4().hex[:12]}")


@pytest.fixture(autouse=True)
def _no_watching(monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers and workers of a test do not watch its repositories (on by default): a test
    that edits files and then looks at stale hits would race the watcher. Tests of watching
    set it again."""
    monkeypatch.setenv("CODEBASE_MCP_WATCH", "false")


def new_project_id() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


async def drop_projects_async(url: str, project_ids: list[str]) -> None:
    """Remove test workspaces (so an external DATABASE_URL is left as found)."""
    from codebase_mcp_search.adapters.postgres import PgDatabase

    db = PgDatabase(url, data_dir=Path(tempfile.gettempdir()))
    try:
        for pid in project_ids:
            await db.drop_workspace(pid)
    finally:
        await db.close()


def drop_projects(url: str, project_ids: list[str]) -> None:
    """``drop_projects_async`` from synchronous code (fixture teardown)."""
    with contextlib.suppress(Exception):
        asyncio.run(drop_projects_async(url, project_ids))


@pytest.fixture
def pg_env(pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Point ``Settings()`` (and subprocesses) at the test server, in a fresh project."""
    project = new_project_id()
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("CODEBASE_MCP_PROJECT", project)
    monkeypatch.setenv("CODEBASE_MCP_DATA_DIR", str(tmp_path / "data"))
    yield project
    drop_projects(pg_url, [project])
