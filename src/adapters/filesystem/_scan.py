"""One walk of one root: directories listed, ignore files applied, files sniffed and hashed."""

from __future__ import annotations

import hashlib
import os
from operator import attrgetter

from codebase_mcp_search.adapters.filesystem._content import (
    has_private_key,
    inside,
    looks_binary,
    looks_minified,
    read_checked,
    reason,
)
from codebase_mcp_search.adapters.filesystem._rules import (
    EXCLUDED_DIRS,
    LOCK_FILES,
    MINIFIED_SUFFIXES,
    VCS_DIRS,
    Patterns,
    Rules,
    secret_name,
)
from codebase_mcp_search.core.languages import language_for_path
from codebase_mcp_search.core.models import (
    FileError,
    ScanEntry,
    ScanResult,
    SkippedFile,
    SkipReason,
)


class Scan:
    """One walk of one root; collects entries, errors, and what it left out and why.

    Every reason is known from what the walk reads anyway (names, the ignore rules, the one
    ``fstat`` and read of each file): recording it costs no extra system call."""

    def __init__(
        self,
        root: str,
        max_file_bytes: int,
        allow_secrets: bool,
        extra: Patterns | None,
    ) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.allow_secrets = allow_secrets
        self.extra = extra
        self.files: list[ScanEntry] = []
        self.errors: list[FileError] = []
        self.skipped: list[SkippedFile] = []

    def run(self) -> ScanResult:
        exclude = None
        if os.path.isdir(os.path.join(self.root, ".git")):
            exclude = self._load_patterns(
                os.path.join(self.root, ".git", "info", "exclude"), ".git/info/exclude", ""
            )
        stack = [(self.root, "", Rules((), (), exclude))]
        while stack:
            self._scan_dir(*stack.pop(), stack)
        self.files.sort(key=attrgetter("path"))
        self.errors.sort(key=attrgetter("path"))
        self.skipped.sort(key=attrgetter("path"))
        return ScanResult(files=self.files, errors=self.errors, skipped=self.skipped)

    def _scan_dir(
        self, directory: str, prefix: str, rules: Rules, stack: list[tuple[str, str, Rules]]
    ) -> None:
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError as e:
            self._error(prefix.rstrip("/") or ".", e)
            return
        ignore_file = gitignore_file = None
        for entry in entries:
            name = entry.name
            if name == "pyvenv.cfg" and prefix:
                self._skip(prefix, SkipReason.EXCLUDED_DIR)  # a virtualenv by another name
                return
            if name == ".ignore":
                ignore_file = entry
            elif name == ".gitignore":
                gitignore_file = entry
        rules = self._with_ignore_files(rules, prefix, ignore_file, gitignore_file)

        for entry in entries:
            name = entry.name
            if name in VCS_DIRS:
                continue
            rel = prefix + name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name in EXCLUDED_DIRS:
                        self._skip(rel + "/", SkipReason.EXCLUDED_DIR)
                    elif self._ignored(rel + "/", rules):
                        self._skip(rel + "/", SkipReason.IGNORED)
                    else:
                        stack.append((entry.path, rel + "/", rules))
                elif entry.is_file(follow_symlinks=False):
                    why = self._excluded_file(name, rel, rules)
                    if why is None:
                        self._add_file(entry.path, rel, follow=False)
                    else:
                        self._skip(rel, why)
                elif entry.is_symlink():
                    self._add_symlink(entry.path, name, rel, rules)
            except OSError as e:
                self._error(rel, e)

    def _with_ignore_files(
        self,
        rules: Rules,
        prefix: str,
        ignore_file: os.DirEntry[str] | None,
        gitignore_file: os.DirEntry[str] | None,
    ) -> Rules:
        ignore, gitignore = rules.ignore, rules.gitignore
        if ignore_file is not None and ignore_file.is_file(follow_symlinks=False):
            patterns = self._load_patterns(ignore_file.path, ".ignore", prefix)
            if patterns is not None:
                ignore = (*ignore, patterns)
        if gitignore_file is not None and gitignore_file.is_file(follow_symlinks=False):
            patterns = self._load_patterns(gitignore_file.path, ".gitignore", prefix)
            if patterns is not None:
                gitignore = (*gitignore, patterns)
        if ignore is rules.ignore and gitignore is rules.gitignore:
            return rules
        return Rules(ignore, gitignore, rules.exclude)

    def _load_patterns(self, path: str, name: str, prefix: str) -> Patterns | None:
        rel = prefix + name
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return None
        except OSError as e:
            self._error(rel, e)
            return None
        try:
            patterns = Patterns(lines, len(prefix))
        except ValueError as e:
            self.errors.append(FileError(path=rel, error=f"invalid ignore pattern: {e}"))
            return None
        return patterns if patterns else None

    def _ignored(self, rel: str, rules: Rules) -> bool:
        if self.extra is not None and self.extra.check(rel):
            return True
        return rules.ignored(rel)

    def _excluded_file(self, name: str, rel: str, rules: Rules) -> SkipReason | None:
        """Why a file is left out by its name or the ignore rules (the cheap checks first)."""
        if name in LOCK_FILES:
            return SkipReason.LOCK_FILE
        if name.endswith(MINIFIED_SUFFIXES):
            return SkipReason.MINIFIED
        if not self.allow_secrets and secret_name(rel):
            return SkipReason.SECRET
        if self._ignored(rel, rules):
            return SkipReason.IGNORED
        return None

    def _add_symlink(self, link: str, name: str, rel: str, rules: Rules) -> None:
        target = os.path.realpath(link)
        if not inside(target, self.root) or not os.path.isfile(target):
            return
        target_rel = os.path.relpath(target, self.root).replace(os.sep, "/")
        if not VCS_DIRS.isdisjoint(target_rel.split("/")):
            return
        why = self._excluded_file(name, rel, rules)
        if why is None and not self.allow_secrets and secret_name(target_rel):
            why = SkipReason.SECRET
        if why is not None:
            self._skip(rel, why)
            return
        self._add_file(target, rel, follow=True)

    def _add_file(self, path: str, rel: str, *, follow: bool) -> None:
        try:
            data = read_checked(path, self.max_file_bytes, follow=follow)
        except OSError as e:
            self._error(rel, e)
            return
        if data is None:  # not a regular file (a FIFO swapped in): nothing to index
            return
        if isinstance(data, SkipReason):
            self._skip(rel, data)
            return
        why = self._content_reason(data)
        if why is not None:
            self._skip(rel, why)
            return
        self.files.append(
            ScanEntry(
                path=rel,
                size=len(data),
                content_hash=hashlib.sha256(data).hexdigest(),
                language=language_for_path(rel),
            )
        )

    def _content_reason(self, data: bytes) -> SkipReason | None:
        if looks_binary(data):
            return SkipReason.BINARY
        if looks_minified(data):
            return SkipReason.MINIFIED
        if not self.allow_secrets and has_private_key(data):
            return SkipReason.SECRET
        return None

    def _skip(self, rel: str, why: SkipReason) -> None:
        self.skipped.append(SkippedFile(path=rel, reason=why))

    def _error(self, rel: str, e: OSError) -> None:
        self.errors.append(FileError(path=rel, error=reason(e)))
