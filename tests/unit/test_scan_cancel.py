"""LocalSourceTree stops its walk, which runs in a thread, once the scan is cancelled: by the
caller's check (tests/contract) or by cancelling the task awaiting it; either way no file is
read after the cancelled call has returned."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.core.errors import Cancelled
from tests.walks import HOLD_S, watched_reads, watched_walk, write_tiny_files

FILES = 200
HOLD_AT = 20


async def test_a_cancelled_scan_task_stops_its_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tiny_files(tmp_path / "repo", FILES)
    with watched_walk(monkeypatch, HOLD_AT) as walk:
        scan = asyncio.create_task(LocalSourceTree().scan(str(root)))
        assert await asyncio.to_thread(walk.held.wait, HOLD_S)
        scan.cancel()
        await asyncio.sleep(0)  # the task takes its cancellation before the walk goes on
        walk.release.set()
        with pytest.raises(asyncio.CancelledError):
            await scan
        assert walk.ended.is_set() and walk.reads == HOLD_AT


async def test_a_scan_cancelled_by_its_check_reads_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tiny_files(tmp_path / "repo", FILES)
    with watched_walk(monkeypatch, HOLD_AT) as walk:
        asked = asyncio.Event()
        scan = asyncio.create_task(LocalSourceTree().scan(str(root), asked.is_set))
        assert await asyncio.to_thread(walk.held.wait, HOLD_S)
        asked.set()
        walk.release.set()
        with pytest.raises(Cancelled):
            await scan
        assert walk.ended.is_set() and walk.reads == HOLD_AT


async def test_read_texts_stops_when_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tiny_files(tmp_path / "repo", FILES)
    tree = LocalSourceTree()
    paths = [f.path for f in (await tree.scan(str(root))).files]
    with watched_reads(monkeypatch, HOLD_AT) as reads:
        reading = asyncio.create_task(tree.read_texts(str(root), paths))
        assert await asyncio.to_thread(reads.held.wait, HOLD_S)
        reading.cancel()
        await asyncio.sleep(0)
        reads.release.set()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert reads.ended.is_set() and reads.reads == HOLD_AT
