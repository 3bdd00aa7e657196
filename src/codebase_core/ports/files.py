"""The ``SourceTree`` port: a repository's files on disk, listed, read and checked for change."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.errors import FileUnreadable
from codebase_mcp_search.core.models import ScanResult


@runtime_checkable
class SourceTree(Protocol):
    """Lists and reads the files of a repository on disk.

    Contract: ``scan`` returns every indexable file below ``root`` (paths relative, with
    ``/``), hashed with sha256 over the raw bytes, honouring ignore files and exclusions; it
    raises ``ValidationFailed`` when ``root`` is not an existing directory, and reports files it
    had to skip for a reason the user should see (unreadable) in ``errors``. ``read_text``
    decodes one file; it raises ``FileUnreadable`` when the file cannot be read or decoded
    (``read_texts`` returns it in the file's place). ``changed`` never raises for a file: one
    it cannot read counts as changed, and every file ``changed`` reports, ``touched`` reports
    too.
    """

    async def scan(self, root: str) -> ScanResult:
        """All indexable files below ``root``."""
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
