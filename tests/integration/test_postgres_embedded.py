"""The embedded Postgres server (no DATABASE_URL): persistent across processes, and sized
with its buffer pool from its first start."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from codebase_mcp_search.adapters.postgres import embedded
from codebase_mcp_search.adapters.postgres.embedded import shared_buffers_mb


def test_embedded_server_persists_across_processes(tmp_path: Path) -> None:
    """No DATABASE_URL: index in one process, search in another (the quick start)."""
    repo_dir = tmp_path / "repo"
    (repo_dir / "pkg").mkdir(parents=True)
    (repo_dir / "pkg" / "auth.py").write_text("def verify_token(token):\n    return token\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CODEBASE_MCP_DATABASE_URL")
    }
    env["CODEBASE_MCP_DATA_DIR"] = str(tmp_path / "data")
    cli = [sys.executable, "-m", "codebase_mcp_search.entrypoints.cli.main"]
    first = subprocess.run(
        [*cli, "index", str(repo_dir)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [*cli, "search", "verify token", "--json"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert "pkg/auth.py" in second.stdout
    assert (tmp_path / "data" / "postgres" / "PG_VERSION").exists()


async def _shared_buffers_mb(uri: str) -> int:
    conn = await asyncpg.connect(uri)
    try:
        return int(
            await conn.fetchval("SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576")
        )
    finally:
        await conn.close()


async def test_embedded_server_runs_with_its_buffer_pool_from_the_first_start(
    tmp_path: Path,
) -> None:
    """A new cluster starts once, with the buffer pool set (no restart to take it); a later
    start keeps it, and a value set by hand is left alone."""
    data = tmp_path / "pg"
    want = shared_buffers_mb()
    assert 128 <= want <= 1024
    try:
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == want
        assert (data / "log").read_text().count("ready to accept connections") == 1
        conn = await asyncpg.connect(uri)
        try:
            await conn.execute("ALTER SYSTEM SET shared_buffers = '200MB'")
        finally:
            await conn.close()
        await asyncio.to_thread(embedded.stop_embedded, data)
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 200
    finally:
        await asyncio.to_thread(embedded.stop_embedded, data)


async def test_embedded_server_that_cannot_take_its_buffer_pool_keeps_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A buffer pool the machine cannot map: the new cluster starts with initdb's default
    instead, and does not try again."""
    monkeypatch.setattr(embedded, "shared_buffers_mb", lambda: 4 * 1024 * 1024)  # 4 TiB
    data = tmp_path / "pg"
    try:
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 128
        await asyncio.to_thread(embedded.stop_embedded, data)
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 128
    finally:
        await asyncio.to_thread(embedded.stop_embedded, data)
