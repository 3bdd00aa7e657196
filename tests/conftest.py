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
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


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

    tmp = Path(tempfile.mkdtemp(prefix="cb-test-pg-"))
    try:
        yield _start(tmp / "pgdata")
    finally:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        stop_embedded(tmp / "pgdata")
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(autouse=True)
def _explicit_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their embedder: ``auto`` would take whatever this machine offers (a running
    Ollama, the local model). Tests of ``auto`` itself set the variable again."""
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "none")


@pytest.fixture(autouse=True)
def _own_job_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's servers and workers share a job queue of their own: a job a test leaves
    behind in the shared test database is never taken up by the next test's worker."""
    monkeypatch.setenv("CODEBASE_MCP_JOB_QUEUE", f"test-{uuid.uuid4().hex[:12]}")


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
