"""First use (issue 35): the embedded server stays up for an idle period after its last user,
so the next command reuses it; after that period nothing of ours is left running, even when
no process of ours is alive any more; and ``serve`` starts its database as it starts."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_embedded_recovery import CLI, alive, embedded_env, postmaster_pid

pytestmark = pytest.mark.slow  # real processes, each starting an embedded server

DEADLINE_S = 90.0  # for "eventually" outcomes on a loaded machine; never a timing assert


def _env(data: Path, idle_s: float, **more: str) -> dict[str, str]:
    env = embedded_env(data)
    env.update(CODEBASE_MCP_PG_IDLE_SECONDS=str(idle_s), CODEBASE_MCP_EMBEDDER="none", **more)
    return env


def _ours(data: Path) -> list[int]:
    """Every live process of this data directory: the server's (they work in it) and its
    watcher (named in its command line)."""
    pgdata = str((data / "postgres").resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not alive(int(entry.name)):
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if cwd == pgdata or (any(a.endswith("linger.py") for a in argv) and pgdata in argv):
            found.append(int(entry.name))
    return found


def _cleanup(data: Path) -> None:
    for pid in _ours(data):
        os.kill(pid, signal.SIGKILL)


def _wait_until_none_left(data: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while left := _ours(data):
        users = data / "postgres" / ".handle_pids.json"
        assert time.monotonic() < deadline, (
            f"still running after the idle period: {left}; users: "
            f"{users.read_text() if users.exists() else None}"
        )
        time.sleep(0.2)


def test_a_second_command_reuses_the_running_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    try:
        subprocess.run([CLI, "projects"], env=_env(data, 600), check=True, timeout=120)
        first = postmaster_pid(data)
        assert first is not None and alive(first)  # up after its only user exited
        subprocess.run([CLI, "projects"], env=_env(data, 600), check=True, timeout=120)
        assert postmaster_pid(data) == first
        # A command with no idle period is the last user: it stops the server as it exits.
        subprocess.run([CLI, "projects"], env=_env(data, 0), check=True, timeout=120)
        assert not alive(first)
    finally:
        _cleanup(data)


def test_after_the_idle_period_nothing_is_left_even_when_its_users_were_killed(
    tmp_path: Path,
) -> None:
    """The only user is killed (SIGKILL: it cannot say it left): no process of ours is alive,
    yet the server and its watcher are gone once the idle period has passed."""
    data = tmp_path / "data"
    victim = subprocess.Popen(
        [CLI, "serve"],
        env=_env(data, 2),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        users = data / "postgres" / ".handle_pids.json"
        deadline = time.monotonic() + DEADLINE_S
        while str(victim.pid) not in (users.read_text() if users.exists() else ""):
            assert time.monotonic() < deadline and victim.poll() is None
            time.sleep(0.1)
        victim.kill()
        victim.wait()
        assert victim.stdin is not None
        victim.stdin.close()
        _wait_until_none_left(data)
        assert postmaster_pid(data) is None  # stopped, not killed: no stale postmaster.pid
    finally:
        if victim.poll() is None:
            victim.kill()
        _cleanup(data)


def test_serve_starts_its_database_as_it_starts(tmp_path: Path) -> None:
    """Before any request (the client has not even sent ``initialize``), and with no job
    worker that would use the database: the server starts it by itself."""
    data = tmp_path / "data"
    server = subprocess.Popen(
        [CLI, "serve"],
        env=_env(data, 0, CODEBASE_MCP_JOB_WORKER="false"),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (pid := postmaster_pid(data)) is None or not alive(pid):
            assert time.monotonic() < deadline, "the server did not start its database"
            assert server.poll() is None
            time.sleep(0.1)
        assert server.stdin is not None
        server.stdin.close()  # end of input: the server exits, its database with it (idle 0)
        server.wait(60)
        _wait_until_none_left(data)
    finally:
        if server.poll() is None:
            server.kill()
        _cleanup(data)
