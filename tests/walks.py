"""A watch on the local tree's walk: how many files it read, a hold at one read, and its end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree, _scan, source_tree

HOLD_S = 30.0
"""How long a held read waits for its release: only a broken test waits that long."""


class WatchedWalk:
    """Counts the files the walk reads (``reads``), holds the walk's thread at its
    ``hold_at``-th read until ``release`` is set (``held`` says it got there), and sets
    ``ended`` when the walk returns or raises."""

    def __init__(self, hold_at: int) -> None:
        self.hold_at = hold_at
        self.reads = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.ended = threading.Event()


@contextmanager
def watched_walk(monkeypatch: pytest.MonkeyPatch, hold_at: int) -> Iterator[WatchedWalk]:
    """A watch on ``scan``: the files its walk reads, and the walk's end."""
    with _watched(monkeypatch, hold_at, (_scan, "read_checked"), (_scan.Scan, "run")) as watch:
        yield watch


@contextmanager
def watched_reads(monkeypatch: pytest.MonkeyPatch, hold_at: int) -> Iterator[WatchedWalk]:
    """A watch on ``read_texts``: the files it reads, and the end of its thread's work."""
    reader = (source_tree, "read_regular")
    with _watched(monkeypatch, hold_at, reader, (LocalSourceTree, "_read_texts")) as watch:
        yield watch


@contextmanager
def _watched(
    monkeypatch: pytest.MonkeyPatch,
    hold_at: int,
    reader: tuple[object, str],
    work: tuple[object, str],
) -> Iterator[WatchedWalk]:
    watch = WatchedWalk(hold_at)
    read, run = getattr(*reader), getattr(*work)

    def counted_read(*args: Any, **kwargs: Any) -> Any:
        watch.reads += 1
        if watch.reads == watch.hold_at:
            watch.held.set()
            watch.release.wait(HOLD_S)
        return read(*args, **kwargs)

    def watched_run(*args: Any, **kwargs: Any) -> Any:
        try:
            return run(*args, **kwargs)
        finally:
            watch.ended.set()

    monkeypatch.setattr(*reader, counted_read)
    monkeypatch.setattr(*work, watched_run)
    try:
        yield watch
    finally:
        watch.release.set()  # a failed test must not leave the walk's thread waiting


def write_tiny_files(root: Path, files: int) -> Path:
    """``files`` one-line Python modules in directories of 50."""
    for i in range(files):
        path = root / f"dir_{i // 50:03d}" / f"mod_{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"x = {i}\n")
    return root
