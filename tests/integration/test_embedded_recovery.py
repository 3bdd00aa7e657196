"""The embedded Postgres killed under a running server (SIGKILL): the server brings it back by
itself, every failure meanwhile is coded, and /health never answers 500. A killed CLI's
embedded server does not outlive the next process that uses it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from tests.embedding_servers import unused_port
from tests.factories import write_sample_repo

CLI = str(Path(sys.executable).with_name("codebase-mcp"))


def embedded_env(data_dir: Path) -> dict[str, str]:
    """This test's own embedded server: no DATABASE_URL."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(CODEBASE_MCP_DATA_DIR=str(data_dir), CODEBASE_MCP_EMBEDDER="hash")
    return env


def postmaster_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by its parent) is gone for our purpose.
    with contextlib.suppress(OSError):
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    return True


def stop_postmaster(data_dir: Path) -> None:
    pid = postmaster_pid(data_dir)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGTERM)


def _spawn(data_dir: Path, port: int, workers: int = 1) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [CLI, "serve", "--transport", "http", "--port", str(port), "--workers", str(workers)],
        env=embedded_env(data_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@asynccontextmanager
async def http_server(data_dir: Path, workers: int = 1) -> AsyncIterator[str]:
    port = unused_port()
    proc = _spawn(data_dir, port, workers)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            deadline = time.monotonic() + 90
            while True:  # until the server answers and its database is up
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{url}/health")).status_code == 200:
                        break
                assert proc.poll() is None and time.monotonic() < deadline
                await asyncio.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        stop_postmaster(data_dir)


async def search(client: Client[Any]) -> str | None:
    """None on success, else the tool error's text."""
    result = await client.call_tool(
        "search_code", {"query": "retry with backoff"}, raise_on_error=False
    )
    return result.content[0].text if result.is_error else None  # type: ignore[union-attr]


async def test_the_server_restarts_its_killed_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    root = write_sample_repo(tmp_path / "repo")
    async with http_server(data) as url, Client(f"{url}/mcp") as client:
        await client.call_tool("index_repository", {"repo_path": str(root)})
        assert await search(client) is None
        pid = postmaster_pid(data)
        assert pid is not None and alive(pid)
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        errors: list[str] = []
        statuses: set[int] = set()
        async with httpx.AsyncClient(timeout=30) as http:
            while True:
                statuses.add((await http.get(f"{url}/health")).status_code)
                error = await search(client)
                if error is None:
                    break
                errors.append(error)
                assert time.monotonic() - killed < 45, errors[-3:]
                await asyncio.sleep(0.2)
            assert (await http.get(f"{url}/health")).status_code == 200
        assert time.monotonic() - killed < 45
        assert statuses <= {200, 503}
        for error in errors:
            assert error.startswith("DATABASE_ERROR"), error
            assert "DATABASE_URL" not in error and "embedded PostgreSQL" in error, error
            # Where the server keeps its files is for its log, never for a client.
            assert str(data) not in error and str(tmp_path) not in error, error
        new_pid = postmaster_pid(data)
        assert new_pid is not None and new_pid != pid and alive(new_pid)


async def test_a_database_killed_under_load_gives_only_coded_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    root = write_sample_repo(tmp_path / "repo")
    async with http_server(data) as url:
        async with Client(f"{url}/mcp") as first:
            await first.call_tool("index_repository", {"repo_path": str(root)})
        outcomes: list[str | None] = []
        health: list[int] = []
        stop = asyncio.Event()

        async def load() -> None:
            async with Client(f"{url}/mcp") as client:
                while not stop.is_set():
                    outcomes.append(await search(client))

        async def probe() -> None:
            async with httpx.AsyncClient(timeout=30) as http:
                while not stop.is_set():
                    health.append((await http.get(f"{url}/health")).status_code)
                    await asyncio.sleep(0.1)

        tasks = [asyncio.create_task(load()) for _ in range(8)] + [asyncio.create_task(probe())]
        await asyncio.sleep(1.5)
        pid = postmaster_pid(data)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        while time.monotonic() - killed < 15:
            await asyncio.sleep(0.5)
            recent = outcomes[-8:]
            if len(outcomes) > 50 and recent and all(o is None for o in recent):
                break
        stop.set()
        await asyncio.gather(*tasks)
        errors = [o for o in outcomes if o is not None]
        assert all(e.startswith("DATABASE_ERROR") for e in errors), {e[:80] for e in errors}
        assert set(health) <= {200, 503} and health[-1] == 200
        assert outcomes[-1] is None  # searches succeed again


def test_a_killed_cli_leaves_no_server_behind(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = embedded_env(data)
    root = write_sample_repo(tmp_path / "repo")
    # A CLI process that starts the embedded server and is killed: its server stays up.
    victim = subprocess.Popen(
        [CLI, "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        subprocess.run([CLI, "index", str(root), "-q"], env=env, check=True, timeout=120)
        users = data / "postgres" / ".handle_pids.json"
        deadline = time.monotonic() + 60
        # The stdio server's job worker uses the database too: wait until it is a user.
        while str(victim.pid) not in (users.read_text() if users.exists() else ""):
            assert time.monotonic() < deadline and victim.poll() is None
            time.sleep(0.1)
        victim.kill()
        victim.wait()
        assert victim.stdin is not None
        victim.stdin.close()
        pid = postmaster_pid(data)
        assert pid is not None
        # The next process adopts the server, and, being its last live user, stops it.
        subprocess.run([CLI, "repos", "--json"], env=env, check=True, timeout=120)
        deadline = time.monotonic() + 30
        while alive(pid):
            assert time.monotonic() < deadline, "the adopted server was left running"
            time.sleep(0.2)
    finally:
        if victim.poll() is None:
            victim.kill()
        stop_postmaster(data)


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_stopped_server_stops_its_embedded_database(tmp_path: Path, workers: int) -> None:
    """SIGTERM ends the server gracefully, and the embedded server it started stops with it
    (uvicorn re-raises the signal after shutdown, which skips exit handlers)."""
    data = tmp_path / "data"
    root = write_sample_repo(tmp_path / "repo")
    port = unused_port()
    proc = _spawn(data, port, workers)
    try:
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=30) as http:
            deadline = time.monotonic() + 90
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{url}/health")).status_code == 200:
                        break
                assert proc.poll() is None and time.monotonic() < deadline
                await asyncio.sleep(0.2)
        async with Client(f"{url}/mcp") as client:
            await client.call_tool("index_repository", {"repo_path": str(root)})
            assert await search(client) is None
        pid = postmaster_pid(data)
        assert pid is not None and alive(pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        deadline = time.monotonic() + 15
        while alive(pid):
            assert time.monotonic() < deadline, "the embedded server outlived the server"
            await asyncio.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        stop_postmaster(data)
