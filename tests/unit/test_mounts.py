"""Which mount a repository is on decides where its files are stat'ed: on the event loop for
a local file system, in a thread for a network one or one that cannot be told."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree, _mounts
from codebase_mcp_search.adapters.filesystem._mounts import is_local, mount_types, type_at

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 259:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 27 0:40 / /data rw,relatime shared:7 master:2 - nfs4 server:/export rw,vers=4.2
41 40 0:41 / /data/local rw,relatime - xfs /dev/vdb rw
42 27 0:42 / /mnt/with\\040space rw - tmpfs tmpfs rw
43 27 0:43 / /data rw - cifs //srv/share rw
"""


def test_mount_points_and_types_are_read_with_their_escapes() -> None:
    mounts = mount_types(MOUNTINFO + "a line without the separator\n")
    assert ("/mnt/with space", "tmpfs") in mounts
    assert ("/data", "nfs4") in mounts  # optional fields before the separator skipped
    assert len(mounts) == 6


@pytest.mark.parametrize(
    ("path", "fstype"),
    [
        ("/", "ext4"),
        ("/home/me/repo", "ext4"),
        ("/data/repo", "cifs"),  # the later mount over /data hides the earlier
        ("/data/local/repo", "xfs"),  # the longest mount point above the path
        ("/database/repo", "ext4"),  # a prefix of a name is not a parent
        ("/mnt/with space/repo", "tmpfs"),
    ],
)
def test_the_mount_holding_a_path(path: str, fstype: str) -> None:
    assert type_at(path, mount_types(MOUNTINFO)) == fstype


def test_unknown_or_network_mounts_are_not_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    monkeypatch.setattr(_mounts, "MOUNTINFO", info)
    assert is_local("/home/me/repo") and is_local("/data/local")
    assert not is_local("/data/repo")
    monkeypatch.setattr(_mounts, "MOUNTINFO", tmp_path / "missing")
    assert not is_local("/home/me/repo")  # cannot tell: a thread, as before


@pytest.mark.parametrize("local", [True, False])
async def test_touched_files_are_the_same_whichever_way_they_are_statted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: bool
) -> None:
    monkeypatch.setattr(
        "codebase_mcp_search.adapters.filesystem.source_tree.is_local", lambda root: local
    )
    threaded: list[Any] = []
    to_thread = asyncio.to_thread

    async def counted(fn: Any, *args: Any) -> Any:
        threaded.append(getattr(fn, "__name__", fn))
        return await to_thread(fn, *args)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    (tmp_path / "old.py").write_text("x = 1\n")
    since = datetime.now(UTC) + timedelta(seconds=10)  # indexed after the files' times
    tree = LocalSourceTree()
    (tmp_path / "new.py").write_text("y = 2\n")
    assert await tree.touched(str(tmp_path), ["old.py", "gone.py"], since) == {"gone.py"}
    later = datetime.now(UTC) - timedelta(seconds=60)
    assert await tree.touched(str(tmp_path), ["old.py", "new.py"], later) == {"old.py", "new.py"}
    # The mount is looked up once per root, in a thread; the stats in one only if not local.
    stats = [name for name in threaded if name == "_touched"]
    assert threaded.count("<lambda>") == 1 and len(stats) == (0 if local else 2)
