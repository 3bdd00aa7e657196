"""In-memory ``WatchClaims`` (the claims of one process) and ``ChangeSource`` (changes a caller
reports, for a store whose trees are not on disk, and for tests of the watching service)."""

from __future__ import annotations

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models.watching import FileChange, WatchMode
from codebase_mcp_search.core.ports.watching import QueuedChanges


class InMemoryWatchClaims:
    """Claims of the watchers of one memory store. A memory store lives in one process, so one
    object serves them all; ``shared`` lets several claimants model several processes of one
    store (a claim held by one is refused to the others until released), as the Postgres
    adapter's locks do."""

    def __init__(self, shared: dict[tuple[str, str], object] | None = None) -> None:
        self._shared: dict[tuple[str, str], object] = {} if shared is None else shared
        self._held: set[tuple[str, str]] = set()

    async def claim(self, project_id: str, root: str) -> bool:
        key = (project_id, root)
        holder = self._shared.setdefault(key, self)
        if holder is not self:
            return False
        self._held.add(key)
        return True

    async def release(self, project_id: str, root: str) -> None:
        key = (project_id, root)
        if self._shared.get(key) is self:
            del self._shared[key]
        self._held.discard(key)

    async def check(self) -> bool:
        return True

    def held(self) -> set[tuple[str, str]]:
        return set(self._held)


class InMemoryStream(QueuedChanges):
    """The changes ``InMemoryChangeSource.report`` gives for one root."""

    def __init__(self, root: str, mode: WatchMode) -> None:
        super().__init__(root)
        self.mode = mode
        self.why: str | None = None

    def put(self, changes: list[FileChange] | None) -> None:
        self._queue.put_nowait(changes)

    async def close(self) -> None:
        self._ended = True


class InMemoryChangeSource:
    """Roots declared with ``add``; ``report`` delivers changes to the streams open on one;
    ``files`` holds what ``exists`` finds."""

    def __init__(self, mode: WatchMode = WatchMode.NATIVE) -> None:
        self._mode = mode
        self._roots: set[str] = set()
        self.files: set[tuple[str, str]] = set()
        """(root, relative path) of the files ``exists`` finds (a test's git lock)."""
        self.streams: dict[str, list[InMemoryStream]] = {}

    def add(self, root: str) -> None:
        self._roots.add(root)

    def remove(self, root: str) -> None:
        """The root is gone: its streams end."""
        self._roots.discard(root)
        for stream in self.streams.pop(root, []):
            stream.put(None)

    def report(self, root: str, changes: list[FileChange]) -> None:
        for stream in self.streams.get(root, []):
            stream.put(list(changes))

    async def sees(self, root: str) -> bool:
        return root in self._roots

    async def exists(self, root: str, rel: str) -> bool:
        return (root, rel) in self.files

    async def open(self, root: str) -> InMemoryStream:
        if root not in self._roots:
            raise ValidationFailed("repo_path", root, "is not a directory")
        stream = InMemoryStream(root, self._mode)
        self.streams.setdefault(root, []).append(stream)
        return stream
