"""The application facade: the one way in to a project's index, search and task tracker.

The CLI, the MCP server and a Python tool embedding the library all go through it, over the
same container; each use case here is a short hop to the service that decides it.

async with open_codebase() as cb:
    await cb.index("/path/to/repo")
    result = await cb.search("where are config files parsed")
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from codebase_mcp_search.core.errors import CoreError, ValidationFailed
from codebase_mcp_search.core.models import (
    DEFAULT_SEARCH_LIMIT,
    IndexResult,
    Job,
    ProjectInfo,
    Repository,
    SearchQuery,
    SearchResult,
    check_project_id,
)
from codebase_mcp_search.core.models.base import check_uuid, no_nul
from codebase_mcp_search.core.models.projects import same_but_case
from codebase_mcp_search.core.ports import ChunkStore
from codebase_mcp_search.core.services import (
    CancellationToken,
    IndexingService,
    JobService,
    ProgressCallback,
    RunCounts,
    SearchService,
    TaskService,
)
from codebase_mcp_search.entrypoints.container import (
    Container,
    EmbedderChoice,
    ProjectStores,
    running_container,
)
from codebase_mcp_search.entrypoints.settings import Settings

T = TypeVar("T")


def resolve_repo_path(path: str | Path, field: str = "repo_path") -> str:
    """An existing directory as a normalised absolute path, or ``ValidationFailed``."""
    raw = str(path)
    if not raw.strip():
        raise ValidationFailed(field, raw, "must be a path to an existing directory")
    no_nul(field, raw)
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
        jobs: JobService,
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
        self._jobs = jobs

    @property
    def store(self) -> ChunkStore:
        """The project's ChunkStore, for tools that read the index directly (the benchmarks)."""
        return self._store

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
        counts: RunCounts | None = None,
    ) -> IndexResult:
        """Bring the index of the repository at ``path`` up to date (incrementally).

        When another process indexes the same repository, ``wait`` queues behind it (progress
        phase ``waiting``); ``wait=False`` raises ``RepositoryBusy`` instead. ``counts`` is
        kept current while the run goes (see ``RunCounts``).
        """
        root = resolve_repo_path(path)
        service = await self.indexing_service()
        return await service.index(
            root, name=name, force=force, progress=progress, cancel=cancel, wait=wait, counts=counts
        )

    async def start_job(
        self, path: str | Path, *, name: str | None = None, force: bool = False
    ) -> Job:
        """Queue a background indexing job for the repository at ``path`` (a worker runs it:
        the MCP server's own, or ``codebase-mcp worker``); ``DuplicateJob`` while one is
        pending, running or blocked for it in this project. ``name`` renames the repository;
        by default it keeps its name (the directory's name for a first index)."""
        root = resolve_repo_path(path)
        if name is None:
            existing = await self._store.find_repository(root)
            name = existing.name if existing is not None else (Path(root).name or root)
        return await self._jobs.start(
            project_id=self.project_id, repo_path=root, repo_name=name, force=force
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

    async def refresh(
        self,
        repository_id: str | None = None,
        *,
        only: Callable[[str], bool] | None = None,
        progress: Callable[[int, int], ProgressCallback] | None = None,
    ) -> list[IndexResult]:
        """Bring the repositories a search would cover up to date (incrementally: cheap when
        nothing changed). A repository whose root is gone, or whose path ``only`` refuses,
        is left as it is (its hits come back ``stale`` where they changed). ``progress(i, n)``
        gives the callback of the i-th of n runs."""
        if repository_id is not None:
            repos = [await self._store.get_repository(_repository_id(repository_id))]
        else:
            repos = await self._store.list_repositories()
        present = [
            r
            for r in repos
            if (only is None or only(r.path)) and await asyncio.to_thread(os.path.isdir, r.path)
        ]
        if not present:
            return []
        service = await self.indexing_service()
        results: list[IndexResult] = []
        for i, repo in enumerate(present):
            report = progress(i, len(present)) if progress is not None else None
            results.append(await service.index(repo.path, name=repo.name, progress=report))
        return results

    async def repositories(self) -> list[Repository]:
        """Indexed repositories with their file and chunk counts."""
        return await self._store.list_repositories()

    async def repository(self, repository_id: str) -> Repository:
        """The repository with this id, or ``RepositoryNotFound``."""
        return await self._store.get_repository(_repository_id(repository_id))

    async def repository_for_path(self, path: str | Path) -> Repository | None:
        """The indexed repository rooted at ``path``, if any."""
        return await self._store.find_repository(resolve_repo_path(path))

    async def delete_repository(self, repository_id: str) -> None:
        """Remove a repository and all its chunks."""
        await self._store.delete_repository(_repository_id(repository_id))

    @property
    def tasks(self) -> TaskService:
        """The task tracker of this project."""
        return self._tasks

    @property
    def jobs(self) -> JobService:
        """Background indexing jobs (the queue is shared by every project of the store)."""
        return self._jobs


def _repository_id(value: object) -> str:
    return check_uuid(value, "repository_id", "a repository id from list_repositories")


async def _resolve(provided: T | Awaitable[T]) -> T:
    """Providers run in async mode (see ``build_container``): their calls are awaitable."""
    if inspect.isawaitable(provided):
        return await provided
    return provided


class Workspaces:
    """Every project (workspace) of one store, each opened as a ``Codebase`` on first use.

    One container underneath: one database pool and one embedder shared by all projects.
    """

    def __init__(self, container: Container, settings: Settings) -> None:
        self._container = container
        self._settings = settings
        default_project = settings.project
        self.default_project = check_project_id(default_project)
        self._codebases: dict[str, Codebase] = {}

    async def codebase(self, project_id: str | None = None, *, create: bool = True) -> Codebase:
        """The project's ``Codebase`` (the default project when ``project_id`` is None).

        A project is created on first use; with ``create=False`` an unknown project other than
        the default raises ``ValidationFailed`` instead (so that reading with a mistyped id
        does not leave an empty workspace behind).
        """
        pid = check_project_id(project_id or self.default_project)
        found = self._codebases.get(pid)
        if found is not None:
            return found
        container = self._container
        stores: ProjectStores = await _resolve(container.project_stores())
        known = await stores.project_ids()
        clash = same_but_case(pid, [*known, *self._codebases])
        if clash is not None:
            raise ValidationFailed(
                "project_id",
                pid,
                f"differs only in case from the existing project {clash!r}: project ids are "
                f"unique whatever their case; use {clash!r}",
            )
        if not create and pid != self.default_project and pid not in known:
            raise ValidationFailed(
                "project_id",
                pid,
                "no such project: list_projects shows them (index_repository or create_task "
                "creates one)",
            )
        store = stores.chunk_store(pid)
        codebase = Codebase(
            pid,
            store=store,
            indexing=lambda: _resolve(container.indexing_service(store=store)),
            search=lambda: _resolve(container.search_service(store=store)),
            tasks=await _resolve(container.task_service(repo=stores.task_repo(pid))),
            jobs=await self.jobs(),
            database_name=stores.database_name(pid),
        )
        return self._codebases.setdefault(pid, codebase)

    async def jobs(self) -> JobService:
        """Background indexing jobs of every project (one queue per store)."""
        service: JobService = await _resolve(self._container.job_service())
        return service

    async def database_name(self, project_id: str) -> str | None:
        """The Postgres schema of a project (None with the memory store)."""
        stores: ProjectStores = await _resolve(self._container.project_stores())
        return stores.database_name(project_id)

    @property
    def settings(self) -> Settings:
        return self._settings

    async def database_status(self, timeout_s: float = 2.0) -> str:
        """``ok``, ``unavailable`` (Postgres does not answer within ``timeout_s``) or
        ``memory``."""
        stores: ProjectStores = await _resolve(self._container.project_stores())
        if stores.database is None:
            return "memory"
        try:
            # The embedded server may need a restart: give that a few seconds more.
            async with asyncio.timeout(timeout_s * 3):
                await stores.database.ping(timeout_s)
        except (CoreError, TimeoutError):
            return "unavailable"
        return "ok"

    async def embedder_status(self) -> str:
        """The embedder in use (``none``: lexical only); ``not loaded`` before the first index
        or search needed it, ``loading`` while it loads, ``unavailable`` if it failed."""
        provider = self._container.embedder_choice
        if not provider.initialized:
            return "not loaded"
        try:
            # Shielded: a load still in progress (the provider reads as initialised once it
            # has started) is not cancelled by this probe giving up.
            choice: EmbedderChoice = await asyncio.wait_for(
                asyncio.shield(_resolve(provider())), timeout=0.2
            )
        except TimeoutError:
            return "loading"
        except CoreError:
            return "unavailable"
        if choice.embedder is None:
            return "none"
        return f"{choice.chosen} ({choice.embedder.model})"

    async def projects(self) -> list[ProjectInfo]:
        """Every project with its database schema and sizes, by id."""
        stores: ProjectStores = await _resolve(self._container.project_stores())
        sizes = await stores.sizes()
        out: list[ProjectInfo] = []
        for pid in await stores.project_ids():
            cb = await self.codebase(pid)
            repos = await cb.repositories()
            tasks = await cb.tasks.list(limit=1)
            out.append(
                ProjectInfo(
                    id=pid,
                    database_name=cb.database_name,
                    repositories=len(repos),
                    files=sum(r.file_count for r in repos),
                    chunks=sum(r.chunk_count for r in repos),
                    tasks=tasks.total_count,
                    size_bytes=sizes.get(pid),
                )
            )
        return out


@asynccontextmanager
async def open_workspaces(settings: Settings | None = None) -> AsyncIterator[Workspaces]:
    """Build the container, start its resources, and yield every project of its store."""
    resolved = settings or Settings()
    async with running_container(resolved) as container:
        yield Workspaces(container, resolved)


@asynccontextmanager
async def open_codebase(
    settings: Settings | None = None, *, project_id: str | None = None
) -> AsyncIterator[Codebase]:
    """Build the container, start its resources, and yield one project's ``Codebase``."""
    resolved = settings or Settings()
    project = check_project_id(project_id or resolved.project)
    async with open_workspaces(resolved) as workspaces:
        yield await workspaces.codebase(project)
