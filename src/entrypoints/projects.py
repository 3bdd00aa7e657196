"""A process's projects: each one's stores and services, built on first use and kept for the
life of the process (a server answers for many projects; a job worker runs any project's)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from codebase_mcp_search.core.models import check_project_id

if TYPE_CHECKING:
    from codebase_mcp_search.adapters.postgres import AnnConfig, PgCaches, PgDatabase
    from codebase_mcp_search.core.ports import ChunkStore, TaskRepo
    from codebase_mcp_search.core.services import IndexingService, SearchService, TaskService

T = TypeVar("T")


async def resolved(provided: T | Awaitable[T]) -> T:
    """A provider's value: providers run in async mode (see ``build_container``)."""
    if inspect.isawaitable(provided):
        return await provided
    return provided


class ProjectStores:
    """Each project's chunk store and task repository, created on first use and kept for the
    life of the process (a server answers for many projects). ``database`` None: memory."""

    def __init__(
        self, database: PgDatabase | None, ann: AnnConfig, caches: PgCaches | None = None
    ) -> None:
        """``caches``: what each Postgres store keeps in this process (default: every cache
        at its budget)."""
        self._database = database
        self._ann = ann
        self._caches = caches
        self._stores: dict[str, ChunkStore] = {}
        self._repos: dict[str, TaskRepo] = {}

    @property
    def database(self) -> PgDatabase | None:
        """The Postgres database (None for the memory store)."""
        return self._database

    def database_name(self, project_id: str) -> str | None:
        """The Postgres schema of a project (None for the memory store)."""
        if self._database is None:
            return None
        from codebase_mcp_search.adapters.postgres.schema import schema_name

        return schema_name(project_id)

    def chunk_store(self, project_id: str) -> ChunkStore:
        pid = check_project_id(project_id)
        store = self._stores.get(pid)
        if store is None:
            # Each store's adapter imported as it is first made: a process uses one kind.
            db = self._database
            if db is None:
                from codebase_mcp_search.adapters.memory.chunk_store import InMemoryChunkStore

                store = InMemoryChunkStore()
            else:
                from codebase_mcp_search.adapters.postgres.chunk_store import PgChunkStore

                store = PgChunkStore(db, pid, ann=self._ann, caches=self._caches)
            self._stores[pid] = store
        return store

    def task_repo(self, project_id: str) -> TaskRepo:
        pid = check_project_id(project_id)
        repo = self._repos.get(pid)
        if repo is None:
            db = self._database
            if db is None:
                from codebase_mcp_search.adapters.memory.task_repo import InMemoryTaskRepo

                repo = InMemoryTaskRepo()
            else:
                from codebase_mcp_search.adapters.postgres.task_repo import PgTaskRepo

                repo = PgTaskRepo(db, pid)
            self._repos[pid] = repo
        return repo

    async def project_ids(self) -> list[str]:
        """Every project: those in the database, or those used by this process (memory)."""
        if self._database is None:
            return sorted(set(self._stores) | set(self._repos))
        return [pid for pid, _ in await self._database.projects()]

    async def sizes(self) -> dict[str, int]:
        """Bytes on disk per project (empty for the memory store)."""
        if self._database is None:
            return {}
        return await self._database.workspace_sizes()


class ProjectServices:
    """Each project's services over its stores, from the container's factories (given as
    providers, called with the project's store): what every interface and the job worker
    resolve a project's use cases through."""

    def __init__(
        self,
        stores: ProjectStores,
        indexing: Callable[..., Any],
        search: Callable[..., Any],
        tasks: Callable[..., Any],
    ) -> None:
        self.stores = stores
        self._make_indexing, self._make_search, self._make_tasks = indexing, search, tasks
        self._indexing: dict[str, IndexingService] = {}
        self._search: dict[str, SearchService] = {}
        self._tasks: dict[str, TaskService] = {}

    async def indexing(self, project_id: str) -> IndexingService:
        """The project's indexing service (the embedder is chosen and opened on first use)."""
        pid = check_project_id(project_id)
        return await _kept(self._indexing, pid, self._make_indexing, store=self.stores.chunk_store)

    async def search(self, project_id: str) -> SearchService:
        """The project's search service (its embedder is resolved when a search needs it)."""
        pid = check_project_id(project_id)
        return await _kept(self._search, pid, self._make_search, store=self.stores.chunk_store)

    async def tasks(self, project_id: str) -> TaskService:
        pid = check_project_id(project_id)
        return await _kept(self._tasks, pid, self._make_tasks, repo=self.stores.task_repo)


async def _kept(
    kept: dict[str, T], pid: str, make: Callable[..., Any], **of_project: Callable[[str], Any]
) -> T:
    """The service ``kept`` holds for ``pid``, made (once) from its store or repository."""
    if pid not in kept:
        made = await resolved(make(**{name: get(pid) for name, get in of_project.items()}))
        kept.setdefault(pid, made)
    return kept[pid]
