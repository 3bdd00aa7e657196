"""Whether a directory lies on a local file system, where a ``stat`` answers in microseconds.

Every search checks its hits' files for changes on disk (``LocalSourceTree.touched``). A
``stat`` of a local file costs a few microseconds, handing it to a worker thread about a
hundred times that; but on a network file system a ``stat`` can wait on the server, and on
the event loop it would hold every other request. So the check runs inline only under a
mount whose type is known local (Linux's ``/proc/self/mountinfo`` tells); anywhere else, or
when the mount cannot be told, in a thread.
"""

from __future__ import annotations

import os
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")

# File system types that keep their metadata on this machine (or in its memory).
LOCAL_TYPES = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "xfs",
        "btrfs",
        "zfs",
        "f2fs",
        "jfs",
        "reiserfs",
        "bcachefs",
        "tmpfs",
        "ramfs",
        "overlay",
        "squashfs",
        "vfat",
        "exfat",
        "ntfs",
        "ntfs3",
        "hfsplus",
        "apfs",
    }
)


def _unescape(field: str) -> str:
    """A mountinfo path field: space, tab, newline and backslash come octal-escaped."""
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def mount_types(text: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of a mountinfo ``text``."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if sep and len(fields) >= 5 and after:
            out.append((_unescape(fields[4]), after[0]))
    return out


def type_at(path: str, mounts: list[tuple[str, str]]) -> str | None:
    """The type of the mount holding the absolute ``path`` (the last of the longest mount
    points above it: a later mount over the same point hides the earlier)."""
    best: tuple[int, str] | None = None
    for point, fstype in mounts:
        under = path == point or path.startswith(point.rstrip("/") + "/")
        if under and (best is None or len(point) >= best[0]):
            best = (len(point), fstype)
    return best[1] if best is not None else None


def is_local(root: str) -> bool:
    """Whether ``root`` (a directory) is on a file system known local; False when unknown.
    Its path is resolved (which may touch the file system: call it off the event loop)."""
    try:
        text = MOUNTINFO.read_text(encoding="utf-8", errors="replace")
        resolved = os.path.realpath(root)
    except OSError:
        return False
    return type_at(resolved, mount_types(text)) in LOCAL_TYPES
