"""InMemorySourceTree: a SourceTree over files held in a dict (roots to path -> bytes).

A reference implementation: ``scan`` applies the core's skip policy (``core.policies``) as the
local tree does, by name, size and content, and reports what it leaves out alike. It honours
the ignore files in its dict (``.ignore``, ``.gitignore``, ``.git/info/exclude``) when given an
``IgnoreRules`` to match them with. Without one (the default: gitignore syntax is a library's,
which this adapter may not import) ignore files are plain files, and ``extra_excludes`` cannot
be given. Directories are implied by the paths (relative, ``/``-separated); a tree holds no
symlinks and nothing unreadable, so a scan's ``errors`` can only be invalid ignore files. A scan
runs on the event loop, without a pause: cancelling its task cannot leave work behind.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from operator import attrgetter

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import Cancelled, FileUnreadable, ValidationFailed
from codebase_mcp_search.core.languages import language_for_file
from codebase_mcp_search.core.models import (
    FileError,
    ScanEntry,
    ScanResult,
    SkippedFile,
    sha256_hex,
    utcnow,
)
from codebase_mcp_search.core.policies import (
    GIT_EXCLUDE,
    GITIGNORE_FILE,
    IGNORE_FILE,
    IgnoreFiles,
    SkipPolicy,
    compile_ignore_file,
    unlisted,
)
from codebase_mcp_search.core.ports import IgnoreMatcher, IgnoreRules


class InMemorySourceTree:
    """Repositories as dicts of relative path to bytes; the core's skip policy, no disk."""

    def __init__(
        self,
        trees: Mapping[str, Mapping[str, bytes]] | None = None,
        *,
        max_file_bytes: int = defaults.MAX_FILE_BYTES,
        allow_secrets: bool = defaults.ALLOW_SECRETS,
        extra_excludes: Sequence[str] = (),
        ignore_rules: IgnoreRules | None = None,
    ) -> None:
        """Raises ``ValidationFailed`` for a size limit below 1, an invalid exclude pattern, or
        exclude patterns without ``ignore_rules`` to compile them."""
        self._rules = ignore_rules
        self._policy = SkipPolicy.configured(
            max_file_bytes=max_file_bytes,
            allow_secrets=allow_secrets,
            extra_excludes=extra_excludes,
            rules=ignore_rules,
        )
        self._trees: dict[str, dict[str, bytes]] = {
            root: dict(files) for root, files in (trees or {}).items()
        }
        # Modification times, as a filesystem keeps them.
        now = utcnow()
        self._mtimes: dict[tuple[str, str], datetime] = {
            (root, path): now for root, files in self._trees.items() for path in files
        }

    def put(self, root: str, path: str, data: bytes | str) -> None:
        """Create or overwrite one file."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._trees.setdefault(root, {})[path] = raw
        self._mtimes[(root, path)] = utcnow()

    def remove(self, root: str, path: str) -> None:
        self._trees.get(root, {}).pop(path, None)
        self._mtimes.pop((root, path), None)

    async def touched(self, root: str, paths: Collection[str], since: datetime | None) -> set[str]:
        files = self._trees.get(root, {})
        return {
            p for p in paths if p not in files or since is None or self._mtimes[(root, p)] > since
        }

    async def changed(
        self, root: str, indexed: Mapping[str, str], since: datetime | None
    ) -> set[str]:
        files = self._trees.get(root, {})
        out: set[str] = set()
        for path in await self.touched(root, indexed, since):
            data = files.get(path)
            # What the scan would not index for its size counts as changed, as on disk.
            if (
                data is None
                or self._policy.skip_size(len(data)) is not None
                or sha256_hex(self._policy.redact(data)) != indexed[path]
            ):
                out.add(path)
        return out

    async def scan(self, root: str, cancelled: Callable[[], bool] | None = None) -> ScanResult:
        """Every file the skip policy keeps, hashed, sorted by path; what it leaves out, and
        why, as ``LocalSourceTree`` reports it for the same files on disk. ``Cancelled`` once
        ``cancelled()`` is True (asked before each directory and file, as on disk)."""
        files = self._trees.get(root)
        if files is None:
            raise ValidationFailed("repo_path", root, "must be an existing directory")
        return _Scan(files, self._policy, self._rules, cancelled or _never).run()

    async def read_text(self, root: str, path: str) -> str:
        data = self._trees.get(root, {}).get(path)
        if data is None:
            raise FileUnreadable(f"{path}: no such file")
        try:
            text = self._policy.redact(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise FileUnreadable(f"{path}: not valid UTF-8 ({e.reason})") from e
        return text.replace("\r\n", "\n").replace("\r", "\n")

    async def read_texts(self, root: str, paths: Sequence[str]) -> list[str | FileUnreadable]:
        out: list[str | FileUnreadable] = []
        for path in paths:
            try:
                out.append(await self.read_text(root, path))
            except FileUnreadable as e:
                out.append(e)
        return out


class _Scan:
    """One walk of one tree's implied directories, in the local tree's order of checks."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        policy: SkipPolicy,
        rules: IgnoreRules | None,
        cancelled: Callable[[], bool],
    ) -> None:
        self.files, self.policy, self.rules = files, policy, rules
        self.cancelled = cancelled
        self.entries: list[ScanEntry] = []
        self.errors: list[FileError] = []
        self.skipped: list[SkippedFile] = []

    def run(self) -> ScanResult:
        listing = _directories(self.files)
        # The exclude file lies in a .git directory, so there is one.
        stack = [("", IgnoreFiles(exclude=self._load(GIT_EXCLUDE)))]
        while stack:
            self._check()
            directory, ignores = stack.pop()
            names, subdirectories = listing[directory]
            why = self.policy.skip_contents(directory, [*names, *subdirectories])
            if why is not None:
                self.skipped.append(SkippedFile(path=directory, reason=why))
                continue
            ignores = ignores.entering(
                self._load(directory + IGNORE_FILE), self._load(directory + GITIGNORE_FILE)
            )
            for name in subdirectories:
                if unlisted(name):
                    continue
                rel = f"{directory}{name}/"
                why = self.policy.skip_directory(rel, ignores)
                if why is None:
                    stack.append((rel, ignores))
                else:
                    self.skipped.append(SkippedFile(path=rel, reason=why))
            for name in names:
                self._check()
                if not unlisted(name):
                    self._add_file(directory + name, ignores)
        self.entries.sort(key=attrgetter("path"))
        self.errors.sort(key=attrgetter("path"))
        self.skipped.sort(key=attrgetter("path"))
        return ScanResult(files=self.entries, errors=self.errors, skipped=self.skipped)

    def _check(self) -> None:
        if self.cancelled():
            raise Cancelled("reading the repository's files was cancelled")

    def _add_file(self, rel: str, ignores: IgnoreFiles) -> None:
        data = self.files[rel]
        why = self.policy.skip_file(rel, ignores) or self.policy.skip_data(data)
        if why is not None:
            self.skipped.append(SkippedFile(path=rel, reason=why))
            return
        self.entries.append(
            ScanEntry(
                path=rel,
                size=len(data),
                content_hash=sha256_hex(self.policy.redact(data)),
                language=language_for_file(rel, data),
            )
        )

    def _load(self, rel: str) -> IgnoreMatcher | None:
        """The patterns of the ignore file at ``rel``, if the tree holds one and can match it."""
        data = self.files.get(rel)
        if data is None or self.rules is None:
            return None
        return compile_ignore_file(self.rules, rel, data, self.errors)


def _never() -> bool:
    return False


def _directories(files: Collection[str]) -> dict[str, tuple[list[str], set[str]]]:
    """Each directory the paths imply (``""``, or a ``/``-terminated path) to the names of its
    files and of its subdirectories."""
    listing: dict[str, tuple[list[str], set[str]]] = {"": ([], set())}
    for path in files:
        directory, _, name = path.rpartition("/")
        parent = ""
        for part in directory.split("/") if directory else ():
            listing[parent][1].add(part)
            parent += part + "/"
            listing.setdefault(parent, ([], set()))
        listing[parent][0].append(name)
    return listing
