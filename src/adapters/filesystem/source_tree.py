"""LocalSourceTree: lists, filters, hashes and reads the files of a repository on local disk.

What ``scan`` leaves out, and how:

- Hard exclusions, never overridden by an ignore file: VCS directories (``.git``, ``.hg``,
  ``.svn``); the built-in list of dependency, virtualenv, cache and build-output directories
  (by name, at any depth), and any directory holding a ``pyvenv.cfg``; lock files; minified
  bundles (``*.min.js``, ``*.min.css``, ``*.map``, and files of 2 KiB or more whose lines
  average over 500 bytes); the ``extra_excludes`` patterns (gitignore syntax, relative to the
  root); binaries (a NUL byte in the first 8 KiB, or a first 8 KiB that is not UTF-8 and is
  more than 5% control bytes); files over ``max_file_bytes``; likely secrets, by name and by a
  ``-----BEGIN ... PRIVATE KEY-----`` line in the first 8 KiB, unless ``allow_secrets``. The
  built-ins are hard because a common whitelist idiom (``*`` then ``!*/``) would otherwise
  re-include ``node_modules``. All of these are silent: they are choices, not failures.
- Ignore files, with ripgrep's precedence: a match in any ``.ignore`` (the nearest file with a
  matching rule decides, last rule wins within a file) beats any ``.gitignore``, which beats the
  root's ``.git/info/exclude``. Each file applies relative to its own directory. ``.gitignore``
  files apply even outside a git checkout. Ignored directories are pruned, so, as in git, a
  negation cannot re-include a file below an ignored directory. Patterns are matched by
  ``pathspec``, whose model is "a path is matched when it or a parent directory is"; a
  differential check against ``git ls-files`` agrees on everyday files (globs, anchored and
  directory patterns, file negations, the ``*`` / ``!*/`` / ``!*.py`` whitelist) but not on
  every combination of negated *directory* patterns spread over several ignore files (``!a/``
  in one file, ``b`` in another), where a file git ignores may be indexed.
- Symlinks: a symlinked directory is never followed (no loops, no escapes, no double
  counting). A symlinked file is indexed under the link's path, with its target's content,
  only when its resolved target is a regular file inside the root and outside a VCS
  directory; a secret-looking target name counts as a secret.

Files that could not be read (permission denied, vanished, a directory that cannot be listed,
an unreadable ignore file) are reported in ``ScanResult.errors`` and the scan goes on.
"""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter

import pathspec

from codebase_core.errors import FileUnreadable, ValidationFailed
from codebase_core.languages import language_for_path
from codebase_core.models import FileError, ScanEntry, ScanResult

SNIFF_BYTES = 8192
MINIFIED_MIN_BYTES = 2048
MINIFIED_LINE_BYTES = 500
# How far before an indexing run's start ``changed`` still reads a file's times as "touched".
MTIME_SLACK_S = 3.0

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
EXCLUDED_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pypackages__",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "dist",
        "build",
        "target",
        "out",
        ".next",
        "coverage",
        ".gradle",
    }
)
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Cargo.lock",
        "uv.lock",
        "composer.lock",
        "Gemfile.lock",
        "go.sum",
    }
)
MINIFIED_SUFFIXES = (".min.js", ".min.css", ".map")

_SECRET_NAME = re.compile(
    r"\.env(?:\..*)?|.*\.(?:pem|key|p12|pfx|keystore)|id_(?:rsa|ed25519|ecdsa|dsa).*"
    r"|\.netrc|\.npmrc|\.pypirc|credentials.*\.json|secrets\.(?:ya?ml|json|toml)",
    re.IGNORECASE,
)
# Public halves and templates of secret-looking names (.env.example, id_rsa.pub).
_PUBLIC_SUFFIXES = (".pub", ".example", ".sample", ".template")
# Anchored at a line start so that code which merely mentions the marker in a string literal
# (a PEM parser, say) is still indexed.
_PRIVATE_KEY = re.compile(rb"^[ \t]*-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.MULTILINE)
# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_CONTROL_BYTES = bytes([*range(0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_utf8_decoder = codecs.getincrementaldecoder("utf-8")

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LocalSourceTree:
    """Local filesystem (os.scandir, pathspec): owns file discovery, filtering and reading."""

    def __init__(
        self,
        *,
        max_file_bytes: int = 1_048_576,
        allow_secrets: bool = False,
        extra_excludes: Sequence[str] = (),
    ) -> None:
        if max_file_bytes < 1:
            raise ValidationFailed(
                "max_file_bytes", max_file_bytes, "must be a positive number of bytes"
            )
        if isinstance(extra_excludes, str):
            raise ValidationFailed(
                "extra_excludes", extra_excludes, "must be a list of patterns, not one string"
            )
        try:
            extra = _Patterns(list(extra_excludes))
        except ValueError as e:
            raise ValidationFailed("extra_excludes", list(extra_excludes), str(e)) from e
        self._max_file_bytes = max_file_bytes
        self._allow_secrets = allow_secrets
        self._extra = extra if extra else None

    async def scan(self, root: str) -> ScanResult:
        """Every indexable file below ``root``, hashed, sorted by path (see the module doc)."""
        return await asyncio.to_thread(self._scan, root)

    async def read_text(self, root: str, path: str) -> str:
        """The UTF-8 text of ``root``/``path`` without a BOM, with LF line endings.

        Raises ``ValidationFailed`` when ``root`` is not a directory or ``path`` is not a
        relative path inside it, and ``FileUnreadable`` when the file cannot be read, is not a
        regular file, resolves outside the root, or is not valid UTF-8.
        """
        return await asyncio.to_thread(lambda: self._read_text(_resolve_root(root), path))

    async def read_texts(self, root: str, paths: Sequence[str]) -> list[str | FileUnreadable]:
        """``read_text`` of each path in one thread, the root resolved once; a file's
        ``FileUnreadable`` takes its place."""
        return await asyncio.to_thread(self._read_texts, root, list(paths))

    def _read_texts(self, root: str, paths: list[str]) -> list[str | FileUnreadable]:
        base = _resolve_root(root)
        out: list[str | FileUnreadable] = []
        for path in paths:
            try:
                out.append(self._read_text(base, path))
            except FileUnreadable as e:
                out.append(e)
        return out

    async def changed(
        self, root: str, indexed: Mapping[str, str], since: datetime | None
    ) -> set[str]:
        """Files of ``indexed`` gone or different now; see ``SourceTree.changed``."""
        return await asyncio.to_thread(self._changed, root, dict(indexed), since)

    def _changed(self, root: str, indexed: dict[str, str], since: datetime | None) -> set[str]:
        out: set[str] = set()
        try:
            base = _resolve_root(root)
        except ValidationFailed:
            return set(indexed)
        # File times come from a coarse clock (and FAT/SMB keep 2 s, NFS servers drift): a
        # write just after the run began may carry an earlier time, so look a little further
        # back. Costs a hash of the hits edited shortly before indexing, nothing else.
        cutoff = since.timestamp() - MTIME_SLACK_S if since is not None else None
        for rel, indexed_hash in indexed.items():
            path = os.path.join(base, rel)
            try:
                # Both the link and what it leads to: swapping a file for a link to an older
                # one changes the link's times only.
                st, lst = os.stat(path), os.lstat(path)
                newest = max(st.st_mtime, st.st_ctime, lst.st_mtime, lst.st_ctime)
                if cutoff is not None and newest <= cutoff:
                    continue
                # What the scan would not index counts as changed, without reading it.
                if not _inside(os.path.realpath(path), base) or st.st_size > self._max_file_bytes:
                    out.add(rel)
                    continue
                data = _read_regular(path, self._max_file_bytes, follow=True)
            except OSError:
                out.add(rel)
                continue
            if data is None or hashlib.sha256(data).hexdigest() != indexed_hash:
                out.add(rel)
        return out

    def _scan(self, root: str) -> ScanResult:
        return _Scan(
            _resolve_root(root), self._max_file_bytes, self._allow_secrets, self._extra
        ).run()

    @staticmethod
    def _read_text(base: str, path: str) -> str:
        """``read_text`` below the resolved root ``base``."""
        if not path or "\0" in path or os.path.isabs(path) or ".." in path.split("/"):
            raise ValidationFailed("path", path, "must be a relative path inside the repository")
        target = os.path.realpath(os.path.join(base, path))
        if not _inside(target, base):
            raise FileUnreadable(f"{path}: resolves outside the repository", path=path)
        try:
            data = _read_regular(target, None, follow=True)
        except OSError as e:
            raise FileUnreadable(f"{path}: {_reason(e)}", path=path) from e
        if data is None:
            raise FileUnreadable(f"{path}: not a regular file", path=path)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise FileUnreadable(
                f"{path}: not valid UTF-8 ({e.reason} at byte {e.start})", path=path
            ) from e
        return text.replace("\r\n", "\n").replace("\r", "\n")


class _Patterns:
    """One gitignore-syntax pattern list, applying to paths below the prefix of length ``start``."""

    __slots__ = ("_dirs", "_files", "start")

    def __init__(self, lines: Sequence[str], start: int = 0) -> None:
        self.start = start
        # GitIgnoreSpec follows git for files: a negated directory pattern does not re-include a
        # file that a file pattern ignores. For a directory itself git's rule is plain "last
        # match wins", which GitIgnoreSpec's priorities get wrong (``*`` then ``!*/``).
        self._files = pathspec.GitIgnoreSpec.from_lines(lines)
        self._dirs = pathspec.PathSpec.from_lines("gitignore", lines)

    def __bool__(self) -> bool:
        return len(self._files) > 0

    def check(self, rel: str) -> bool | None:
        """Whether ``rel`` (``/``-terminated for a directory) is ignored; None if no rule hits."""
        spec = self._dirs if rel.endswith("/") else self._files
        return spec.check_file(rel[self.start :]).include


@dataclass(frozen=True, slots=True)
class _Rules:
    """The ignore files in force in one directory, outermost first."""

    ignore: tuple[_Patterns, ...]
    gitignore: tuple[_Patterns, ...]
    exclude: _Patterns | None

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` is ignored, with ripgrep's precedence (see the module doc)."""
        for layer in (self.ignore, self.gitignore):
            for patterns in reversed(layer):
                hit = patterns.check(rel)
                if hit is not None:
                    return hit
        return self.exclude is not None and bool(self.exclude.check(rel))


class _Scan:
    """One walk of one root; collects entries and errors."""

    def __init__(
        self,
        root: str,
        max_file_bytes: int,
        allow_secrets: bool,
        extra: _Patterns | None,
    ) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.allow_secrets = allow_secrets
        self.extra = extra
        self.files: list[ScanEntry] = []
        self.errors: list[FileError] = []

    def run(self) -> ScanResult:
        exclude = None
        if os.path.isdir(os.path.join(self.root, ".git")):
            exclude = self._load_patterns(
                os.path.join(self.root, ".git", "info", "exclude"), ".git/info/exclude", ""
            )
        stack = [(self.root, "", _Rules((), (), exclude))]
        while stack:
            self._scan_dir(*stack.pop(), stack)
        self.files.sort(key=attrgetter("path"))
        self.errors.sort(key=attrgetter("path"))
        return ScanResult(files=self.files, errors=self.errors)

    def _scan_dir(
        self, directory: str, prefix: str, rules: _Rules, stack: list[tuple[str, str, _Rules]]
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
                    if name not in EXCLUDED_DIRS and not self._ignored(rel + "/", rules):
                        stack.append((entry.path, rel + "/", rules))
                elif entry.is_file(follow_symlinks=False):
                    if not self._excluded_file(name, rel, rules):
                        self._add_file(entry.path, rel, follow=False)
                elif entry.is_symlink():
                    self._add_symlink(entry.path, name, rel, rules)
            except OSError as e:
                self._error(rel, e)

    def _with_ignore_files(
        self,
        rules: _Rules,
        prefix: str,
        ignore_file: os.DirEntry[str] | None,
        gitignore_file: os.DirEntry[str] | None,
    ) -> _Rules:
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
        return _Rules(ignore, gitignore, rules.exclude)

    def _load_patterns(self, path: str, name: str, prefix: str) -> _Patterns | None:
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
            patterns = _Patterns(lines, len(prefix))
        except ValueError as e:
            self.errors.append(FileError(path=rel, error=f"invalid ignore pattern: {e}"))
            return None
        return patterns if patterns else None

    def _ignored(self, rel: str, rules: _Rules) -> bool:
        if self.extra is not None and self.extra.check(rel):
            return True
        return rules.ignored(rel)

    def _excluded_file(self, name: str, rel: str, rules: _Rules) -> bool:
        return (
            name in LOCK_FILES
            or name.endswith(MINIFIED_SUFFIXES)
            or (not self.allow_secrets and _secret_name(rel))
            or self._ignored(rel, rules)
        )

    def _add_symlink(self, link: str, name: str, rel: str, rules: _Rules) -> None:
        target = os.path.realpath(link)
        if not _inside(target, self.root) or not os.path.isfile(target):
            return
        target_rel = os.path.relpath(target, self.root).replace(os.sep, "/")
        if not VCS_DIRS.isdisjoint(target_rel.split("/")):
            return
        if self._excluded_file(name, rel, rules):
            return
        if not self.allow_secrets and _secret_name(target_rel):
            return
        self._add_file(target, rel, follow=True)

    def _add_file(self, path: str, rel: str, *, follow: bool) -> None:
        try:
            data = _read_regular(path, self.max_file_bytes, follow=follow)
        except OSError as e:
            self._error(rel, e)
            return
        if data is None or _looks_binary(data) or _looks_minified(data):
            return
        if (
            not self.allow_secrets
            and data.find(b"-----BEGIN", 0, SNIFF_BYTES) != -1
            and _PRIVATE_KEY.search(data, 0, SNIFF_BYTES)
        ):
            return
        self.files.append(
            ScanEntry(
                path=rel,
                size=len(data),
                content_hash=hashlib.sha256(data).hexdigest(),
                language=language_for_path(rel),
            )
        )

    def _error(self, rel: str, e: OSError) -> None:
        self.errors.append(FileError(path=rel, error=_reason(e)))


def _resolve_root(root: str) -> str:
    resolved = os.path.realpath(root) if root else ""
    if not resolved or not os.path.isdir(resolved):
        raise ValidationFailed("repo_path", root, "must be an existing directory")
    return resolved


def _inside(path: str, root: str) -> bool:
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def _read_regular(path: str, limit: int | None, *, follow: bool) -> bytes | None:
    """The bytes of a regular file; None for anything else or a file over ``limit`` bytes."""
    # O_NONBLOCK: a FIFO swapped in after listing must not hang the scan.
    fd = os.open(path, _OPEN_FLAGS if follow else _OPEN_FLAGS | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (limit is not None and st.st_size > limit):
            return None
        parts: list[bytes] = []
        total = 0
        want = st.st_size + 1
        while limit is None or total <= limit:
            chunk = os.read(fd, want if limit is None else min(want, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            want = 1 << 16
        if limit is not None and total > limit:
            return None
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _secret_name(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    if name.lower().endswith(_PUBLIC_SUFFIXES):
        return False
    return (
        _SECRET_NAME.fullmatch(name) is not None
        or rel == ".aws/credentials"
        or rel.endswith("/.aws/credentials")
    )


def _looks_binary(data: bytes) -> bool:
    if data.find(b"\0", 0, SNIFF_BYTES) != -1:
        return True
    head = data[:SNIFF_BYTES]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if controls * 20 <= len(head):
        return False
    try:
        # Incremental, so that a character cut at the 8 KiB boundary is not an error.
        _utf8_decoder().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _looks_minified(data: bytes) -> bool:
    if len(data) < MINIFIED_MIN_BYTES:
        return False
    unterminated = not data.endswith((b"\n", b"\r"))
    if len(data) <= MINIFIED_LINE_BYTES * (data.count(b"\n") + unterminated):
        return False
    # Classic Mac line endings: lines end with CR alone.
    return len(data) > MINIFIED_LINE_BYTES * (data.count(b"\r") + unterminated)
