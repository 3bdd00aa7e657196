"""File changes as a ``ChangeSource`` reports them, and how a repository is watched."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ChangeKind(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One change below a watched root: ``path`` relative to the root, ``/``-separated.
    A plain dataclass, not a model: a ``git checkout`` reports thousands at once."""

    kind: ChangeKind
    path: str


class WatchMode(StrEnum):
    """How a watcher learns of changes: the file system's events, or periodic rescans of the
    tree's metadata (where the platform's watch limit is reached or the file system does not
    notify, such as a network mount)."""

    NATIVE = "native"
    POLLING = "polling"
