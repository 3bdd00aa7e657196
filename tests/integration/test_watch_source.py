"""The watchfiles change source on this machine's file system: native events, the polling
fallback, and git's files read for a repository's branch and commit (issue 37)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from codebase_mcp_search.adapters.filesystem import (
    PathspecIgnoreRules,
    read_head,
    root_ignore_files,
)
from codebase_mcp_search.adapters.watch import WatchfilesChangeSource
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models.watching import ChangeKind, FileChange, WatchMode
from codebase_mcp_search.core.policies import SkipPolicy
from codebase_mcp_search.core.services.watching.coalescing import relevant
from tests.integration.test_mcp_watch import git

DEADLINE_S = 30.0


async def changes_until(stream: object, wanted: set[str]) -> dict[str, ChangeKind]:
    """Changes taken from ``stream`` until every path of ``wanted`` was reported."""
    seen: dict[str, ChangeKind] = {}
    async with asyncio.timeout(DEADLINE_S):
        while not wanted <= set(seen):
            batch: list[FileChange] = await stream.next()  # type: ignore[attr-defined]
            assert batch
            seen.update({c.path: c.kind for c in batch})
    return seen


@pytest.mark.parametrize("polling", [False, True])
async def test_changes_below_a_root_are_reported(tmp_path: Path, polling: bool) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "old.py").write_text("x = 1\n")
    source = WatchfilesChangeSource(polling=polling, poll_ms=200)
    assert await source.sees(str(tmp_path))
    stream = await source.open(str(tmp_path))
    try:
        assert stream.mode is (WatchMode.POLLING if polling else WatchMode.NATIVE)
        assert (stream.why is not None) is polling
        (tmp_path / "pkg" / "new.py").write_text("y = 2\n")
        (tmp_path / "pkg" / "old.py").unlink()
        seen = await changes_until(stream, {"pkg/new.py", "pkg/old.py"})
        assert seen["pkg/old.py"] is ChangeKind.DELETED
        assert seen["pkg/new.py"] in (ChangeKind.ADDED, ChangeKind.MODIFIED)
    finally:
        await stream.close()
    with pytest.raises(EOFError):
        await stream.next()


async def test_a_file_made_and_removed_in_one_batch_reads_as_deleted(tmp_path: Path) -> None:
    stream = await WatchfilesChangeSource().open(str(tmp_path))
    try:
        lock = tmp_path / "index.lock"
        lock.write_text("x")
        os.replace(lock, tmp_path / "index")
        seen = await changes_until(stream, {"index.lock", "index"})
        assert seen["index.lock"] is ChangeKind.DELETED
    finally:
        await stream.close()


async def test_a_missing_root_is_refused(tmp_path: Path) -> None:
    source = WatchfilesChangeSource()
    assert not await source.sees(str(tmp_path / "nope"))
    with pytest.raises(ValidationFailed):
        await source.open(str(tmp_path / "nope"))


def test_branch_and_commit_from_loose_and_packed_refs_and_worktrees(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    assert read_head(str(root)) is None
    git(root, "init", "-q", "-b", "trunk")
    head = read_head(str(root))
    assert head is not None and (head.branch, head.commit) == ("trunk", None)
    (root / "a.py").write_text("a = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a")
    sha = git(root, "rev-parse", "HEAD")
    assert read_head(str(root)) == type(head)("trunk", sha)
    git(root, "pack-refs", "--all")  # the loose ref moves into packed-refs
    assert not (root / ".git" / "refs" / "heads" / "trunk").exists()
    assert read_head(str(root)) == type(head)("trunk", sha)
    git(root, "checkout", "-q", "--detach")
    assert read_head(str(root)) == type(head)(None, sha)
    wt = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "side", str(wt), "trunk")
    assert (wt / ".git").is_file()
    assert read_head(str(wt)) == type(head)("side", sha)
    git(wt, "status")  # git itself takes the worktree


async def test_refused_native_events_fall_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the platform refuses events (inotify's watch limit: a system-wide sysctl, not
    reachable from a test), the root is polled instead, and the stream says why."""
    real = WatchfilesChangeSource._notify

    def refusing(self: WatchfilesChangeSource, root: str, polling: bool) -> object:
        if not polling:
            raise OSError(28, "OS file watch limit reached")
        return real(self, root, polling)

    monkeypatch.setattr(WatchfilesChangeSource, "_notify", refusing)
    stream = await WatchfilesChangeSource(poll_ms=200).open(str(tmp_path))
    try:
        assert stream.mode is WatchMode.POLLING
        assert stream.why is not None and "watch limit" in stream.why
        (tmp_path / "new.py").write_text("y = 2\n")
        seen = await changes_until(stream, {"new.py"})
        assert seen["new.py"] in (ChangeKind.ADDED, ChangeKind.MODIFIED)
    finally:
        await stream.close()


def test_the_root_ignore_files_are_read_as_the_scan_reads_them(tmp_path: Path) -> None:
    """A regular ``.gitignore`` at the root rules out what it names; one that is a link is not
    followed, by the scan nor by the watcher (else the watcher would drop changes to files
    the scan indexes)."""
    policy, rules = SkipPolicy.configured(), PathspecIgnoreRules()
    (tmp_path / ".gitignore").write_text("*.log\n")
    assert not relevant("run.log", policy, root_ignore_files(str(tmp_path), rules))
    (tmp_path / ".gitignore").unlink()
    (tmp_path / "patterns").write_text("*.log\n")
    (tmp_path / ".gitignore").symlink_to(tmp_path / "patterns")
    assert relevant("run.log", policy, root_ignore_files(str(tmp_path), rules))
