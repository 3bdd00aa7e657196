"""What a watcher needs of a root's file system: the ignore files in force at the root (the
same ones a scan reads first), and whether the root is on a network file system, whose change
events do not arrive from other machines (watching polls there)."""

from __future__ import annotations

import os

from codebase_mcp_search.adapters.filesystem._mounts import MOUNTINFO, mount_types, type_at
from codebase_mcp_search.core.models import FileError
from codebase_mcp_search.core.policies import (
    GIT_EXCLUDE,
    GITIGNORE_FILE,
    IGNORE_FILE,
    IgnoreFiles,
    compile_ignore_file,
)
from codebase_mcp_search.core.ports import IgnoreMatcher, IgnoreRules

NETWORK_TYPES = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "davfs"}
)


def _compiled(
    root: str, rel: str, rules: IgnoreRules, *, follow: bool = True
) -> IgnoreMatcher | None:
    """``rel``'s patterns; without ``follow``, none from a link (as the scan reads a
    directory's own ignore files: a link could lead anywhere)."""
    path = os.path.join(root, *rel.split("/"))
    if not follow and os.path.islink(path):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    errors: list[FileError] = []  # a bad pattern: the index run reports it
    return compile_ignore_file(rules, rel, data, errors)


def root_ignore_files(root: str, rules: IgnoreRules) -> IgnoreFiles:
    """The ignore files of ``root`` itself (``.ignore``, ``.gitignore``, and
    ``.git/info/exclude`` when ``.git`` is a directory), as a scan starts with them."""
    exclude = None
    if os.path.isdir(os.path.join(root, ".git")):
        exclude = _compiled(root, GIT_EXCLUDE, rules)
    return IgnoreFiles(exclude=exclude).entering(
        _compiled(root, IGNORE_FILE, rules, follow=False),
        _compiled(root, GITIGNORE_FILE, rules, follow=False),
    )


def network_mount(root: str) -> str | None:
    """Why ``root`` must be polled: the network file system it is on (None: not one, or not
    known to be)."""
    try:
        text = MOUNTINFO.read_text(encoding="utf-8", errors="replace")
        resolved = os.path.realpath(root)
    except OSError:
        return None
    fstype = type_at(resolved, mount_types(text))
    base = (fstype or "").removeprefix("fuse.")
    if fstype in NETWORK_TYPES or base in {"sshfs", "rclone"}:
        return f"{fstype} is a network file system, whose change events may not arrive"
    return None
