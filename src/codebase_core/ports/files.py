"""The file ports: ``SourceTree`` (a repository's files on disk, listed, read and checked for
change) and ``IgnoreRules`` / ``IgnoreMatcher`` (gitignore-syntax matching, a library the core
does not import)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.errors import FileUnreadable
from codebase_mcp_search.core.models import ScanResult


@runtime_checkable
class SourceTree(Protocol):
    """Lists and reads the files of a repository on disk.

    Contract: ``scan`` returns every indexable file below ``root`` (paths relative, with
    ``/``), hashed with sha256 over its bytes as the skip policy's ``redact`` gives them (the
    raw bytes, but for private key blocks), leaving out what the core's skip policy says
    (``core.policies``) and recording each file or directory left out, with its reason, in
    ``skipped``; it raises ``ValidationFailed`` when ``root`` is not an existing directory,
    and reports files it had to skip for a reason the user should see (unreadable) in
    ``errors``. ``read_text`` decodes one file, redacted alike; it raises ``FileUnreadable``
    when the file cannot be read or decoded (``read_texts`` returns it in the file's place).
    ``changed`` compares the same hash and never raises for a file: one it cannot read, or one
    the scan would leave out for its size, counts as changed, and every file ``changed``
    reports, ``touched`` reports too.

    Cancellation: ``scan`` asks ``cancelled`` (when given) between entries, and once it answers
    True raises ``Cancelled`` without reading another file. Cancelling the task that awaits a
    method stops its work alike: once the cancelled call has returned, nothing it started
    reads another file (a walk of a whole disk must not outlive the job that asked for it).
    """

    async def scan(self, root: str, cancelled: Callable[[], bool] | None = None) -> ScanResult:
        """All indexable files below ``root``; ``Cancelled`` once ``cancelled()`` is True."""
        ...

    async def read_text(self, root: str, path: str) -> str:
        """The decoded text of ``root``/``path``."""
        ...

    async def read_texts(self, root: str, paths: Sequence[str]) -> list[str | FileUnreadable]:
        """``read_text`` of each of ``paths``, in order, with the ``FileUnreadable`` a file
        raised in its place (a batch costs one hop to a thread, not one per file)."""
        ...

    async def touched(self, root: str, paths: Collection[str], since: datetime | None) -> set[str]:
        """Of ``paths``, the files that may differ from the text indexed at ``since``: gone, or
        modified after it (every one when ``since`` is None). Nothing is read: a stat per
        file, so a search checks its hits' files cheaply and hashes only these."""
        ...

    async def changed(
        self, root: str, indexed: Mapping[str, str], since: datetime | None
    ) -> set[str]:
        """Of ``indexed`` (relative path to the content hash it was indexed with), the files
        that are gone or whose bytes differ now. A file not modified after ``since`` is taken
        as unchanged without being read (a stat per file, a hash only of files touched since).
        """
        ...


@runtime_checkable
class IgnoreMatcher(Protocol):
    """One compiled list of gitignore-syntax patterns (one ignore file, or configured excludes).

    Contract: ``check`` takes a path relative to the repository root, ``/``-separated, ending
    with ``/`` for a directory, and lying below the directory the list was compiled for. It
    answers True when the list ignores the path, False when a negation re-includes it, and
    None when no pattern matches it. For a directory the last matching pattern wins; for a
    file, as in git, a negated directory pattern (``!*/``) does not re-include a file that a
    file pattern (``*``) ignores. It never raises. Pruning is the caller's: a scan does not
    descend into an ignored directory, so no pattern can re-include a file below it.
    """

    def check(self, rel: str) -> bool | None:
        """Whether ``rel`` is ignored (True), re-included (False), or not matched (None)."""
        ...


@runtime_checkable
class IgnoreRules(Protocol):
    """Compiles gitignore-syntax pattern lists into ``IgnoreMatcher``s.

    Contract: ``compile`` reads ``lines`` as the lines of one ignore file in ``directory``
    (``""`` for the repository root, else a relative path ending with ``/``): anchored patterns
    (``/x``, ``a/b``) are anchored there, and the matcher answers for paths below it. It
    returns None when the lines hold no pattern (only blank lines and comments), and raises
    ``ValidationFailed`` (its ``rule`` says why) when a line is not a valid pattern. Pure CPU
    work, so synchronous: a scan compiles each ignore file it meets on its own thread.
    """

    def compile(self, lines: Sequence[str], directory: str = "") -> IgnoreMatcher | None:
        """The matcher of ``lines`` in ``directory``; None when they hold no pattern."""
        ...
