"""LocalSourceTree: lists, filters, hashes and reads the files of a repository on local disk.

What ``scan`` leaves out, and why, is the core's skip policy (``core.policies.skipping``, with
the ignore files' precedence in ``core.policies.ignoring``), matched by pathspec
(``ignore_rules``). What is the local tree's own:

- Symlinks: a symlinked directory is never followed (no loops, no escapes, no double
  counting). A symlinked file is indexed under the link's path, with its target's content,
  only when its resolved target is a regular file inside the root and outside a VCS
  directory (otherwise left out unreported); the policy judges the link's name, and its
  target's name as a possible secret. An ignore file that is a symlink is not read.
- A file's size is known from the one ``fstat`` of its read: a file over ``max_file_bytes``
  is not read.
- Files that could not be read (permission denied, vanished, a directory that cannot be
  listed, an unreadable ignore file) are reported in ``ScanResult.errors`` and the scan goes
  on. FIFOs and other special files are neither read nor reported.

Work on many files runs in a thread that stops, before its next file, once its call is
cancelled (``_stopping``): a cancelled job's walk of a large tree reads no further.

Where each part lives: ``_scan`` (the walk), ``_reading`` (safe reading, containment),
``_mounts`` (which roots ``touched`` may stat on the event loop), ``_stopping`` (threads that
stop), ``ignore_rules`` (pathspec); this module holds the ``SourceTree`` port's methods.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from codebase_mcp_search.adapters.filesystem._mounts import is_local
from codebase_mcp_search.adapters.filesystem._reading import (
    inside,
    read_regular,
    reason,
    resolve_root,
)
from codebase_mcp_search.adapters.filesystem._scan import Scan
from codebase_mcp_search.adapters.filesystem._stopping import Stopped, check, in_thread, never
from codebase_mcp_search.adapters.filesystem.ignore_rules import PathspecIgnoreRules
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import FileUnreadable, ValidationFailed
from codebase_mcp_search.core.models import ScanResult
from codebase_mcp_search.core.policies import SkipPolicy
from codebase_mcp_search.core.ports import IgnoreRules

# How far before an indexing run's start ``changed`` still reads a file's times as "touched".
MTIME_SLACK_S = 3.0
# At most this many files (two stats each, microseconds on a local disk) are checked on the
# event loop; more go to a thread.
INLINE_STATS = 64


class LocalSourceTree:
    """Local filesystem (os.scandir, pathspec): owns file discovery and reading, and applies
    the core's skip policy."""

    def __init__(
        self,
        *,
        max_file_bytes: int = defaults.MAX_FILE_BYTES,
        allow_secrets: bool = defaults.ALLOW_SECRETS,
        extra_excludes: Sequence[str] = (),
        ignore_rules: IgnoreRules | None = None,
    ) -> None:
        """Raises ``ValidationFailed`` for a size limit below 1 or an invalid exclude pattern.
        ``ignore_rules`` compiles ignore files and ``extra_excludes`` (default: pathspec)."""
        self._rules = ignore_rules if ignore_rules is not None else PathspecIgnoreRules()
        self._policy = SkipPolicy.configured(
            max_file_bytes=max_file_bytes,
            allow_secrets=allow_secrets,
            extra_excludes=extra_excludes,
            rules=self._rules,
        )
        # Whether each root seen is on a local file system (``_mounts``), for the process's
        # life: a mount that appears over an indexed repository later is not seen.
        self._local: dict[str, bool] = {}

    async def scan(self, root: str, cancelled: Callable[[], bool] | None = None) -> ScanResult:
        """Every indexable file below ``root``, hashed, sorted by path; what it leaves out, and
        why, sorted too (see the module doc). ``Cancelled`` once ``cancelled()`` is True."""
        return await in_thread(self._scan, root, cancelled=cancelled)

    async def read_text(self, root: str, path: str) -> str:
        """The UTF-8 text of ``root``/``path`` without a BOM, with LF line endings, private
        key blocks redacted as the skip policy says.

        Raises ``ValidationFailed`` when ``root`` is not a directory or ``path`` is not a
        relative path inside it, and ``FileUnreadable`` when the file cannot be read, is not a
        regular file, resolves outside the root, or is not valid UTF-8.
        """
        return await asyncio.to_thread(lambda: self._read_text(resolve_root(root), path))

    async def read_texts(self, root: str, paths: Sequence[str]) -> list[str | FileUnreadable]:
        """``read_text`` of each path in one thread, the root resolved once; a file's
        ``FileUnreadable`` takes its place."""
        return await in_thread(self._read_texts, root, list(paths))

    def _read_texts(
        self, root: str, paths: list[str], stopped: Stopped
    ) -> list[str | FileUnreadable]:
        base = resolve_root(root)
        out: list[str | FileUnreadable] = []
        for path in paths:
            check(stopped)
            try:
                out.append(self._read_text(base, path))
            except FileUnreadable as e:
                out.append(e)
        return out

    async def touched(self, root: str, paths: Collection[str], since: datetime | None) -> set[str]:
        """Files of ``paths`` gone or modified after ``since``; see ``SourceTree.touched``.
        A few files on a local file system are stat'ed on the event loop (``_mounts``)."""
        local = self._local.get(root)
        if local is None:
            local = self._local[root] = await asyncio.to_thread(is_local, root)
        if local and len(paths) <= INLINE_STATS:
            return self._touched(root, paths, since, never)
        return await in_thread(self._touched, root, paths, since)

    async def changed(
        self, root: str, indexed: Mapping[str, str], since: datetime | None
    ) -> set[str]:
        """Files of ``indexed`` gone or different now; see ``SourceTree.changed``."""
        return await in_thread(self._changed, root, dict(indexed), since)

    def _touched(
        self, root: str, paths: Collection[str], since: datetime | None, stopped: Stopped
    ) -> set[str]:
        return set(self._touched_stats(root, paths, since, stopped))

    def _touched_stats(
        self, root: str, paths: Collection[str], since: datetime | None, stopped: Stopped
    ) -> dict[str, os.stat_result | None]:
        """The files of ``paths`` gone (None) or modified after ``since``, with their stat."""
        # The root as given, not resolved (a walk of its every component, on each search): a
        # stat only reads times, and a file under a moved or swapped root is reported, then
        # ``changed`` reads it below the resolved root.
        # File times come from a coarse clock (and FAT/SMB keep 2 s, NFS servers drift): a
        # write just after the run began may carry an earlier time, so look a little further
        # back. Costs a hash of the hits edited shortly before indexing, nothing else.
        cutoff = since.timestamp() - MTIME_SLACK_S if since is not None else None
        out: dict[str, os.stat_result | None] = {}
        for rel in paths:
            check(stopped)
            path = os.path.join(root, rel)
            try:
                # Both the link and what it leads to: swapping a file for a link to an older
                # one changes the link's times only.
                st, lst = os.stat(path), os.lstat(path)
            except OSError:
                out[rel] = None
                continue
            newest = max(st.st_mtime, st.st_ctime, lst.st_mtime, lst.st_ctime)
            if cutoff is None or newest > cutoff:
                out[rel] = st
        return out

    def _changed(
        self, root: str, indexed: dict[str, str], since: datetime | None, stopped: Stopped
    ) -> set[str]:
        try:
            base = resolve_root(root)
        except ValidationFailed:
            return set(indexed)
        out: set[str] = set()
        for rel, st in self._touched_stats(root, indexed, since, stopped).items():
            check(stopped)
            path = os.path.join(base, rel)
            try:
                # What the scan would not index counts as changed, without reading it.
                if (
                    st is None
                    or not inside(os.path.realpath(path), base)
                    or self._policy.skip_size(st.st_size) is not None
                ):
                    out.add(rel)
                    continue
                data = read_regular(path, self._policy.max_file_bytes, follow=True)
            except OSError:
                out.add(rel)
                continue
            if (
                data is None
                or hashlib.sha256(self._policy.redact(data)).hexdigest() != indexed[rel]
            ):
                out.add(rel)
        return out

    def _scan(self, root: str, stopped: Stopped) -> ScanResult:
        return Scan(resolve_root(root), self._policy, self._rules, stopped).run()

    def _read_text(self, base: str, path: str) -> str:
        """``read_text`` below the resolved root ``base``."""
        if not path or "\0" in path or os.path.isabs(path) or ".." in path.split("/"):
            raise ValidationFailed("path", path, "must be a relative path inside the repository")
        target = os.path.realpath(os.path.join(base, path))
        if not inside(target, base):
            raise FileUnreadable(f"{path}: resolves outside the repository", path=path)
        try:
            data = read_regular(target, None, follow=True)
        except OSError as e:
            raise FileUnreadable(f"{path}: {reason(e)}", path=path) from e
        if data is None:
            raise FileUnreadable(f"{path}: not a regular file", path=path)
        try:
            text = self._policy.redact(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise FileUnreadable(
                f"{path}: not valid UTF-8 ({e.reason} at byte {e.start})", path=path
            ) from e
        return text.replace("\r\n", "\n").replace("\r", "\n")
