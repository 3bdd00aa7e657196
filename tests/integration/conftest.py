"""Integration tests run the real defaults: Postgres (the session's test server), each test in
a fresh project, with data written under the test's tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from codebase_mcp_search.adapters.local import local_extra_installed
from codebase_mcp_search.adapters.postgres import PgDatabase, changes
from tests.conftest import drop_projects, new_project_id


@pytest.fixture(autouse=True)
def _postgres_defaults(pg_env: str) -> str:
    return pg_env


# The local model's tests need the ``local`` extra (scripts/test.sh installs it, so CI runs
# them); without it they are not collected rather than counted as skipped.
collect_ignore = [] if local_extra_installed() else ["test_local_embedder.py"]


# --- the Postgres tests (test_postgres_*.py) ------------------------------------------------


@pytest.fixture
def project(pg_url: str) -> Iterator[str]:
    pid = new_project_id()
    yield pid
    drop_projects(pg_url, [pid])


@pytest.fixture
async def db(pg_url: str, tmp_path: Path, project: str) -> AsyncIterator[PgDatabase]:
    """A database on the test's server; closed (its background work cancelled: a store's
    read of its vectors may still be running) before the test's project is dropped, which
    would wait on that work's locks."""
    database = PgDatabase(pg_url, data_dir=tmp_path)
    yield database
    await database.close()


@pytest.fixture
async def other(pg_url: str, tmp_path: Path) -> AsyncIterator[PgDatabase]:
    """A second database client on the same server: another process's view."""
    database = PgDatabase(pg_url, data_dir=tmp_path / "other")
    yield database
    await database.close()


@pytest.fixture
def no_trust_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens good for an hour: what changes them in these tests is a write seen."""
    monkeypatch.setattr(changes, "TRUST_S", 3600.0)
