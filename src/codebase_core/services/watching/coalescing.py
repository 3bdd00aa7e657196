"""Which file changes call for an index run, and when: the pure decisions of watching.

A change matters when the index run would look at its file: not inside ``.git/`` (but for
``.git/HEAD``: a branch switched without touching a tracked file still moves the repository's
commit), not in a directory the skip policy leaves out (``node_modules``, a virtualenv, what
the root's ignore files ignore), not a file it skips by name. Changes gather until the tree
has been quiet for a moment, and while git holds its index lock (a checkout, rebase, stash or
pull under way; whether ``.git/index.lock`` exists is asked once the burst is due, as its
events can come in any order within a batch, or late on a busy machine): one run per burst,
not one per file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.models.watching import FileChange
from codebase_mcp_search.core.policies import IgnoreFiles, SkipPolicy, in_vcs_dir

GIT_HEAD = ".git/HEAD"
GIT_INDEX_LOCK = ".git/index.lock"


def relevant(rel: str, policy: SkipPolicy, ignores: IgnoreFiles) -> bool:
    """Whether a change to ``rel`` (relative to the root, ``/``-separated) may change what an
    index run writes (see the module doc). The root's ignore files decide; those of
    subdirectories are left to the run, which then finds nothing changed."""
    if rel.startswith(".git/") or rel == ".git":
        return rel == GIT_HEAD
    if not rel or in_vcs_dir(rel):
        return False
    parts = rel.split("/")
    prefix = ""
    for part in parts[:-1]:
        prefix += part + "/"
        if policy.skip_directory(prefix, ignores) is not None:
            return False
    return policy.skip_file(rel, ignores) is None


@dataclass(frozen=True, slots=True)
class WatchConfig:
    """How a watcher paces itself (``core.defaults`` explains each)."""

    quiet_s: float = defaults.WATCH_QUIET_S
    max_delay_s: float = defaults.WATCH_MAX_DELAY_S
    git_busy_max_s: float = defaults.WATCH_GIT_BUSY_MAX_S
    recheck_s: float = defaults.WATCH_RECHECK_S
    retry_s: float = 0.5
    """While the repository's job runs, how often to try queueing the next one."""


class Burst:
    """The changes of one repository waiting for their run: when it is due (``due_in``)."""

    def __init__(self, config: WatchConfig) -> None:
        self._config = config
        self.first: float | None = None
        self.last: float | None = None
        self.paths: set[str] = set()
        self._git_busy_since: float | None = None

    def note(
        self, changes: Iterable[FileChange], now: float, policy: SkipPolicy, ignores: IgnoreFiles
    ) -> int:
        """Take a batch of changes seen at ``now``; returns how many matter."""
        taken = 0
        for change in changes:
            if relevant(change.path, policy, ignores):
                self.paths.add(change.path)
                taken += 1
        if taken:
            self.first = now if self.first is None else self.first
            self.last = now
        return taken

    def held_by_git(self, busy: bool, now: float) -> bool:
        """Whether the due burst waits for git, which holds its index lock at ``now`` if
        ``busy``: it does, asked again every ``quiet_s``, up to ``git_busy_max_s`` (a lock left
        behind by a killed git does not hold changes for ever)."""
        if not busy:
            self._git_busy_since = None
            return False
        if self._git_busy_since is None:
            self._git_busy_since = now
        return now - self._git_busy_since < self._config.git_busy_max_s

    def due_in(self, now: float) -> float | None:
        """Seconds until the run is due (0: now), None when nothing waits."""
        if self.first is None or self.last is None:
            return None
        c = self._config
        quiet_at = self.last + c.quiet_s
        latest = self.first + c.max_delay_s
        return max(0.0, min(quiet_at, latest) - now)

    def clear(self) -> None:
        self.first = self.last = None
        self.paths = set()
        self._git_busy_since = None
