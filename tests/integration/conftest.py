"""Integration tests run the real defaults: Postgres (the session's test server), each test in
a fresh project, with data written under the test's tmp_path."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _postgres_defaults(pg_env: str) -> str:
    return pg_env
