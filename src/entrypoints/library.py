"""Library facade: embed codebase-mcp in another Python tool in a few lines.

async with open_codebase() as cb:
    await cb.index("/path/to/repo")
    result = await cb.search("where are config files parsed")
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

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
from entrypoints.container import Container, build_container
from entrypoints.settings import Settings


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

    def __init__(self, container: Container, project_id: str) -> None:
        self._container = container
        self.project_id = project_id

    async def index(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        force: bool = False,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
    ) -> IndexResult:
        """Bring the index of the repository at ``path`` up to date (incrementally)."""
        root = resolve_repo_path(path)
        service: IndexingService = self._container.indexing_service()
        return await service.index(root, name=name, force=force, progress=progress, cancel=cancel)

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
        service: SearchService = self._container.search_service()
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
        store: ChunkStore = self._container.chunk_store()
        return await store.list_repositories()

    async def repository_for_path(self, path: str | Path) -> Repository | None:
        """The indexed repository rooted at ``path``, if any."""
        store: ChunkStore = self._container.chunk_store()
        return await store.find_repository(resolve_repo_path(path))

    async def delete_repository(self, repository_id: str) -> None:
        """Remove a repository and all its chunks."""
        store: ChunkStore = self._container.chunk_store()
        await store.delete_repository(repository_id)

    @property
    def tasks(self) -> TaskService:
        """The task tracker of this project."""
        service: TaskService = self._container.task_service()
        return service


@asynccontextmanager
async def open_codebase(
    settings: Settings | None = None, *, project_id: str | None = None
) -> AsyncIterator[Codebase]:
    """Build the container, start its resources, and yield a ``Codebase``."""
    resolved = settings or Settings()
    project = check_project_id(project_id or resolved.project)
    container = build_container(resolved)
    started = container.init_resources()
    if started is not None:
        await started
    try:
        yield Codebase(container, project)
    finally:
        stopped = container.shutdown_resources()
        if stopped is not None:
            await stopped
