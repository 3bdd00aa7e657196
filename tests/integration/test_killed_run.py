"""A test run that is killed leaves no embedded Postgres running and no data folder behind.

A real pytest (this suite's conftest) runs a tiny test that holds the session's embedded
server, in a temporary directory of its own (TMPDIR); it is killed as a contributor or CI
kills it, and after a generous deadline nothing of its server remains.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import pg_watchdog

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 120.0

TINY = """
import os, time
from pathlib import Path

def test_holds_the_server(pg_url):
    Path(os.environ["CB_TEST_READY"]).write_text(pg_url)
    time.sleep(600)
"""


def _wait_for(what: str, done: Callable[[], object]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S:.0f} s: {what}")
        time.sleep(0.2)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """The run's TMPDIR: short, as the server's Unix socket path must be (107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="cbk-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name
)
def test_a_killed_run_leaves_no_server_and_no_folder(
    sig: signal.Signals, tmp_path: Path, short_tmp: Path
) -> None:
    tmp = short_tmp
    (tmp_path / "test_tiny.py").write_text(TINY)
    ready = tmp_path / "ready"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CODEBASE_MCP_TEST_DATABASE_URL", "PYTEST_ADDOPTS")
    }
    env |= {"TMPDIR": str(tmp), "CB_TEST_READY": str(ready), "PYTHONPATH": _pythonpath()}
    run = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"),
            *("-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path)),
            *("-p", "tests.conftest", str(tmp_path / "test_tiny.py")),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for("the run's server up", lambda: ready.exists() or run.poll() is not None)
        assert run.poll() is None, run.communicate()[0].decode(errors="replace")
        folders = list(tmp.glob(f"{pg_watchdog.PREFIX}*"))
        assert len(folders) == 1, folders
        # The server runs in the run's folder: what follows can fail.
        assert pg_watchdog.postgres_processes(folders[0])
        run.send_signal(sig)
        output = run.communicate(timeout=DEADLINE_S)[0].decode(errors="replace")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    _wait_for(
        f"no postgres process of the run left, and no folder ({output[-2000:]})",
        lambda: not pg_watchdog.postgres_processes(tmp) and not list(tmp.glob("cb-test-pg-*")),
    )


def _pythonpath() -> str:
    """The tree under test first (a worktree's mounted package), then what was there."""
    parts = [str(REPO), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(p for p in parts if p)
