"""A project's repositories as its schema holds them: ``RepositoryReader`` reads them for every
call; ``memos.KeptRepositories`` keeps the list between writes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.models import Repository

_REPOSITORIES = "SELECT r.* FROM {s}.repositories r WHERE {where} ORDER BY r.name, r.id"
ALL_REPOSITORIES = Statement(_REPOSITORIES, where="true")
REPOSITORY_BY_ID = Statement(_REPOSITORIES, where="r.id = $1")
REPOSITORY_BY_PATH = Statement(_REPOSITORIES, where="r.path = $1")


class RepositoryReader:
    """The repositories of one project, read on a session of ``session``'s."""

    def __init__(self, session: Callable[[], AbstractAsyncContextManager[ProjectSession]]):
        self._session = session

    async def all(self) -> list[Repository]:
        """Every repository, by name."""
        return await self._read(ALL_REPOSITORIES)

    async def by_id(self, repository_id: str) -> Repository | None:
        found = await self._read(REPOSITORY_BY_ID, repository_id)
        return found[0] if found else None

    async def by_path(self, path: str) -> Repository | None:
        found = await self._read(REPOSITORY_BY_PATH, path)
        return found[0] if found else None

    async def _read(self, statement: Statement, *args: Any) -> list[Repository]:
        async with self._session() as db:
            rows = await db.conn.fetch(db.sql(statement), *args)
        return [
            Repository(
                id=r["id"],
                name=r["name"],
                path=r["path"],
                embedding_model=r["embedding_model"],
                embedding_dimension=r["embedding_dimension"],
                file_count=r["file_count"],
                chunk_count=r["chunk_count"],
                indexed_at=r["indexed_at"],
                vector_count=r["vector_count"],
                analyser_version=r["analyser_version"],
            )
            for r in rows
        ]
