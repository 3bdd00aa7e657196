"""InMemorySourceTree: a SourceTree over files held in a dict (roots to path -> bytes)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from codebase_mcp_search.core.errors import FileUnreadable, ValidationFailed
from codebase_mcp_search.core.languages import language_for_path
from codebase_mcp_search.core.models import ScanEntry, ScanResult, sha256_hex, utcnow


class InMemorySourceTree:
    """Repositories as dicts of relative path to bytes; no ignore rules, no disk."""

    def __init__(self, trees: Mapping[str, Mapping[str, bytes]] | None = None) -> None:
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
            if data is None or sha256_hex(data) != indexed[path]:
                out.add(path)
        return out

    async def scan(self, root: str) -> ScanResult:
        files = self._trees.get(root)
        if files is None:
            raise ValidationFailed("repo_path", root, "must be an existing directory")
        return ScanResult(
            files=[
                ScanEntry(
                    path=path,
                    size=len(data),
                    content_hash=sha256_hex(data),
                    language=language_for_path(path),
                )
                for path, data in sorted(files.items())
            ]
        )

    async def read_text(self, root: str, path: str) -> str:
        data = self._trees.get(root, {}).get(path)
        if data is None:
            raise FileUnreadable(f"{path}: no such file")
        try:
            text = data.decode("utf-8")
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
