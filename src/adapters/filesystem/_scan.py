"""One walk of one root: directories listed, ignore files read, symlinks resolved, files read
and hashed. What to leave out, and why, is the core's ``SkipPolicy``; this is the I/O. The walk
asks ``stopped`` before each entry and raises ``Cancelled`` when it says so (``_stopping``)."""

from __future__ import annotations

import hashlib
import os
from operator import attrgetter

from codebase_mcp_search.adapters.filesystem._reading import inside, read_checked, reason
from codebase_mcp_search.adapters.filesystem._stopping import Stopped, check, never
from codebase_mcp_search.core.languages import language_for_file
from codebase_mcp_search.core.models import (
    FileError,
    ScanEntry,
    ScanResult,
    SkippedFile,
    SkipReason,
)
from codebase_mcp_search.core.policies import (
    GIT_EXCLUDE,
    GITIGNORE_FILE,
    IGNORE_FILE,
    IgnoreFiles,
    SkipPolicy,
    compile_ignore_file,
    in_vcs_dir,
    unlisted,
)
from codebase_mcp_search.core.ports import IgnoreMatcher, IgnoreRules


class Scan:
    """One walk of one root; collects entries, errors, and what it left out and why.

    Every reason is known from what the walk reads anyway (names, the ignore files, the one
    ``fstat`` and read of each file): recording it costs no extra system call."""

    def __init__(
        self, root: str, policy: SkipPolicy, rules: IgnoreRules, stopped: Stopped = never
    ) -> None:
        self.root = root
        self.policy = policy
        self.rules = rules
        self.stopped = stopped
        self.files: list[ScanEntry] = []
        self.errors: list[FileError] = []
        self.skipped: list[SkippedFile] = []

    def run(self) -> ScanResult:
        exclude = None
        if os.path.isdir(os.path.join(self.root, ".git")):
            exclude = self._load(os.path.join(self.root, *GIT_EXCLUDE.split("/")), GIT_EXCLUDE)
        stack = [(self.root, "", IgnoreFiles(exclude=exclude))]
        while stack:
            check(self.stopped)
            self._scan_dir(*stack.pop(), stack)
        self.files.sort(key=attrgetter("path"))
        self.errors.sort(key=attrgetter("path"))
        self.skipped.sort(key=attrgetter("path"))
        return ScanResult(files=self.files, errors=self.errors, skipped=self.skipped)

    def _scan_dir(
        self,
        directory: str,
        prefix: str,
        ignores: IgnoreFiles,
        stack: list[tuple[str, str, IgnoreFiles]],
    ) -> None:
        try:
            with os.scandir(directory) as it:
                entries = {entry.name: entry for entry in it}
        except OSError as e:
            self._error(prefix.rstrip("/") or ".", e)
            return
        why = self.policy.skip_contents(prefix, entries)
        if why is not None:
            self._skip(prefix, why)
            return
        ignores = ignores.entering(
            self._load_entry(entries.get(IGNORE_FILE), prefix),
            self._load_entry(entries.get(GITIGNORE_FILE), prefix),
        )

        for name, entry in entries.items():
            check(self.stopped)
            if unlisted(name):
                continue
            rel = prefix + name
            try:
                if entry.is_dir(follow_symlinks=False):
                    why = self.policy.skip_directory(rel + "/", ignores)
                    if why is None:
                        stack.append((entry.path, rel + "/", ignores))
                    else:
                        self._skip(rel + "/", why)
                elif entry.is_file(follow_symlinks=False):
                    why = self.policy.skip_file(rel, ignores)
                    if why is None:
                        self._add_file(entry.path, rel, follow=False)
                    else:
                        self._skip(rel, why)
                elif entry.is_symlink():
                    self._add_symlink(entry.path, rel, ignores)
            except OSError as e:
                self._error(rel, e)

    def _load_entry(self, entry: os.DirEntry[str] | None, prefix: str) -> IgnoreMatcher | None:
        """The patterns of an ignore file listed in the directory ``prefix``; a link to one is
        not followed (it could lead anywhere)."""
        if entry is None or not entry.is_file(follow_symlinks=False):
            return None
        return self._load(entry.path, prefix + entry.name)

    def _load(self, path: str, rel: str) -> IgnoreMatcher | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            self._error(rel, e)
            return None
        return compile_ignore_file(self.rules, rel, data, self.errors)

    def _add_symlink(self, link: str, rel: str, ignores: IgnoreFiles) -> None:
        target = os.path.realpath(link)
        if not inside(target, self.root) or not os.path.isfile(target):
            return
        target_rel = os.path.relpath(target, self.root).replace(os.sep, "/")
        if in_vcs_dir(target_rel):
            return
        why = self.policy.skip_file(rel, ignores) or self.policy.skip_target(target_rel)
        if why is not None:
            self._skip(rel, why)
            return
        self._add_file(target, rel, follow=True)

    def _add_file(self, path: str, rel: str, *, follow: bool) -> None:
        try:
            data = read_checked(path, self.policy.max_file_bytes, follow=follow)
        except OSError as e:
            self._error(rel, e)
            return
        if data is None:  # not a regular file (a FIFO swapped in): nothing to index
            return
        if isinstance(data, SkipReason):
            self._skip(rel, data)
            return
        why = self.policy.skip_content(data)
        if why is not None:
            self._skip(rel, why)
            return
        self.files.append(
            ScanEntry(
                path=rel,
                size=len(data),
                content_hash=hashlib.sha256(self.policy.redact(data)).hexdigest(),
                language=language_for_file(rel, data),
            )
        )

    def _skip(self, rel: str, why: SkipReason) -> None:
        self.skipped.append(SkippedFile(path=rel, reason=why))

    def _error(self, rel: str, e: OSError) -> None:
        self.errors.append(FileError(path=rel, error=reason(e)))
