"""Library facade: embed codebase-mcp in another Python tool in a few lines.

async with open_codebase() as cb:
    await cb.index("/path/to/repo")
    result = await cb.search("where are config files parsed")
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from adapters.postgres import schema_name
from codebase_core.errors import ValidationFailed
from codebase_core.models import (
    DEFAULT_SEARCH_LIMIT,
    IndexResult,
    Repository,
    SearchQuery,
    SearchResult,
    check_project_id,
)
from codebase_core.ports import ChunkStore
from codebase_core.services import (
    CancellationToken,
    IndexingService,
    ProgressCallback,
    SearchService,
    TaskService,
)
from entrypoints.container import running_container
from entrypoints.settings import Settings

T = TypeVar("T")


def resolve_repo_path(path: str | Path, field: str = "repo_path") -> str:
    """An existing directory as a normalised absolute path, or ``ValidationFailed``."""
    raw = str(path)
    if not raw.strip():
        raise ValidationFailed(field, raw, "must be a path to an existing directory")
    p = Path(raw).expanduser()
    if not p.exists():
        raise ValidationFailed(field, raw, "does not exist: give an existing directory")
    if not p.is_dir():
        raise ValidationFailed(field, raw, "is not a directory: give a repository's root folder")
    return str(p.resolve())


class Codebase:
    """One project's index, search and task tracker, backed by a configured container."""

    def __init__(
        self,
        project_id: str,
        *,
        store: ChunkStore,
        indexing: Callable[[], Awaitable[IndexingService]],
        search: Callable[[], Awaitable[SearchService]],
        tasks: TaskService,
        database_name: str | None,
    ) -> None:
        self.project_id = project_id
        self.database_name = database_name
        """The Postgres schema holding this project (None with the memory store)."""
        self._store = store
        # Built on first use: they need the embedder, which may load a model or probe a server,
        # and listing repositories or tracking tasks should not wait for that.
        self._make_indexing = indexing
        self._make_search = search
        self._indexing: IndexingService | None = None
        self._search: SearchService | None = None
        self._tasks = tasks

    async def indexing_service(self) -> IndexingService:
        """The indexing service (its embedder is chosen and opened on the first call)."""
        if self._indexing is None:
            self._indexing = await self._make_indexing()
        return self._indexing

    async def search_service(self) -> SearchService:
        """The search service (its embedder is chosen and opened on the first call)."""
        if self._search is None:
            self._search = await self._make_search()
        return self._search

    async def index(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        force: bool = False,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
    ) -> IndexResult:
        """Bring the index of the repository at ``path`` up to date (incrementally).

        When another process indexes the same repository, ``wait`` queues behind it (progress
        phase ``waiting``); ``wait=False`` raises ``RepositoryBusy`` instead.
        """
        root = resolve_repo_path(path)
        service = await self.indexing_service()
        return await service.index(
            root, name=name, force=force, progress=progress, cancel=cancel, wait=wait
        )

    async def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        repository_id: str | None = None,
        file_type: str | None = None,
        directory: str | None = None,
        language: str | None = None,
    ) -> SearchResult:
        """Ranked chunks for a natural-language or identifier query."""
        service = await self.search_service()
        q = SearchQuery.build(
            query,
            mode=mode,
            limit=limit,
            repository_id=repository_id,
            file_type=file_type,
            directory=directory,
            language=language,
            default_mode=service.default_mode,
        )
        return await service.search(q)

    async def repositories(self) -> list[Repository]:
        """Indexed repositories with their file and chunk counts."""
        return await self._store.list_repositories()

    async def repository_for_path(self, path: str | Path) -> Repository | None:
        """The indexed repository rooted at ``path``, if any."""
        return await self._store.find_repository(resolve_repo_path(path))

    async def delete_repository(self, repository_id: str) -> None:
        """Remove a repository and all its chunks."""
        await self._store.delete_repository(repository_id)

    @property
    def tasks(self) -> TaskService:
        """The task tracker of this project."""
        return self._tasks


async def _resolve(provided: T | Awaitable[T]) -> T:
    """Providers run in async mode (see ``build_container``): their calls are awaitable."""
    if inspect.isawaitable(provided):
        return await provided
    return provided


@asynccontextmanager
async def open_codebase(
    settings: Settings | None = None, *, project_id: str | None = None
) -> AsyncIterator[Codebase]:
    """Build the container, start its resources, and yield a ``Codebase``."""
    resolved = (settings or Settings()).model_copy()
    project = check_project_id(project_id or resolved.project)
    resolved.project = project
    async with running_container(resolved) as container:
        yield Codebase(
            project,
            store=await _resolve(container.chunk_store()),
            indexing=lambda: _resolve(container.indexing_service()),
            search=lambda: _resolve(container.search_service()),
            tasks=await _resolve(container.task_service()),
            database_name=schema_name(project) if resolved.store == "postgres" else None,
        )
