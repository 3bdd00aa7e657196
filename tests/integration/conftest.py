"""Integration tests run the real defaults: Postgres (the session's test server), each test in
a fresh project, with data written under the test's tmp_path."""

from __future__ import annotations

import pytest

from adapters.local import local_extra_installed


@pytest.fixture(autouse=True)
def _postgres_defaults(pg_env: str) -> str:
    return pg_env


# The local model's tests need the ``local`` extra (scripts/test.sh installs it, so CI runs
# them); without it they are not collected rather than counted as skipped.
collect_ignore = [] if local_extra_installed() else ["test_local_embedder.py"]
