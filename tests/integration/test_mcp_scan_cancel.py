"""``cancel_job`` stops a background job's scan of the disk, through a real MCP client: once the
job reads ``cancelled``, the walk has ended and reads no further file (issue 34: a job of "/"
said cancelled while its scan went on reading for minutes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastmcp import Client

from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.integration.test_mcp_jobs import wait_status
from tests.integration.test_mcp_server import call
from tests.walks import HOLD_S, watched_walk, write_tiny_files

FILES = 500
HOLD_AT = 50


async def test_cancel_job_stops_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tiny_files(tmp_path / "repo", FILES)
    with watched_walk(monkeypatch, HOLD_AT) as walk:
        async with Client(build_server(Settings(store="memory", embedder="none"))) as c:
            started = await call(c, "start_indexing_background", repo_path=str(root))
            assert await asyncio.to_thread(walk.held.wait, HOLD_S)  # the job is scanning
            asked = await call(c, "cancel_job", job_id=started["job_id"])
            assert asked["status"] in ("cancelling", "cancelled")
            walk.release.set()
            ended = await wait_status(c, started["job_id"], {"cancelled", "completed"}, 10)
            assert ended["status"] == "cancelled", ended
            assert walk.ended.is_set() and walk.reads == HOLD_AT
