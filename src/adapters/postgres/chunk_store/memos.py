"""Two memos of a project's state, each in front of the reader it spares a round trip.

``KeptRepositories`` keeps the repository list (every search lists the repositories, to check
their models) under the project's change token taken before it was read
(``adapters.postgres.changes``): while the token is the same, no write of the project was
seen, and the list answers; otherwise it is read again. Without a token nothing is kept. The
list is accounted to the process's budget (``cache_ledger``), ``REPOSITORY_BYTES`` a
repository, and let go when the budget takes it back.

``KeptDimension`` keeps the project's vector dimension from the first read or write on: it
changes only when a model switch retypes the vector column, which this store's guard reports
(``learned``). A retype by another process is not seen here; the column's type still refuses
a vector of another size.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, Slot
from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store.model_guard import StoredDimension
from codebase_mcp_search.adapters.postgres.chunk_store.repositories import RepositoryReader
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.core.models import Repository

# A ``Repository`` with its strings, timestamp and list slot (a generous estimate: a few
# hundred bytes of fields), and the list's own.
REPOSITORY_BYTES: Final = 2_000
LIST_BYTES: Final = 200


class KeptRepositories:
    """``RepositoryReader`` with the list kept between writes (see the module docstring)."""

    def __init__(
        self,
        inner: RepositoryReader,
        token: Callable[[], Awaitable[Token | None]],
        ledger: CacheLedger | None = None,
        project: str = "",
    ) -> None:
        self._inner = inner
        self._token = token
        self._kept: Slot[tuple[Token, tuple[Repository, ...]]] = Slot(
            ledger, project, "repositories"
        )

    def clear(self) -> None:
        self._kept.clear()

    async def all(self) -> list[Repository]:
        kept = await self._current()
        if kept is not None:
            return list(kept)
        token = await self._token()
        found = await self._inner.all()
        if token is not None:
            self._kept.keep((token, tuple(found)), LIST_BYTES + REPOSITORY_BYTES * len(found))
        return found

    async def by_id(self, repository_id: str) -> Repository | None:
        kept = await self._current()
        if kept is None:
            return await self._inner.by_id(repository_id)
        return next((r for r in kept if r.id == repository_id), None)

    async def by_path(self, path: str) -> Repository | None:
        return await self._inner.by_path(path)

    async def _current(self) -> tuple[Repository, ...] | None:
        """The list as last read, if no write was seen since."""
        kept = self._kept.value
        if kept is None:
            return None
        token = await self._token()
        if token is not None and token == kept[0]:
            self._kept.touch()
            return kept[1]
        return None


class KeptDimension:
    """``StoredDimension`` with the dimension kept once known (see the module docstring)."""

    def __init__(self, inner: StoredDimension) -> None:
        self._inner = inner
        self._dimension: int | None = None

    def clear(self) -> None:
        self._dimension = None

    async def get(self, db: ProjectSession) -> int | None:
        if self._dimension is None:
            self._dimension = await self._inner.get(db)
        return self._dimension

    def learned(self, dimension: int) -> None:
        self._dimension = dimension
