"""One project's index, search and task tracker: the ``Codebase`` a library user (and each
interface) works with. Raw values become the core's request types (``IndexRequest``,
``SearchQuery``) here, once, for a library user; the CLI and the MCP tools build those
themselves and hand them to the same methods. Each method is one hop to the service that
decides."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Unpack

from codebase_mcp_search.core.errors import DuplicateJob, Hint
from codebase_mcp_search.core.models import (
    Chunk,
    IndexRequest,
    IndexResult,
    Job,
    JobKind,
    Repository,
    SearchOptions,
    SearchQuery,
    SearchResult,
    SemanticLayer,
    VectorResult,
    repository_id_for,
)
from codebase_mcp_search.core.models.base import check_uuid
from codebase_mcp_search.core.ports import FileSnapshots, RepositoryCatalog
from codebase_mcp_search.core.services import (
    CancellationToken,
    IndexingService,
    JobService,
    ProgressCallback,
    RunCounts,
    RunProgress,
    SearchService,
    TaskService,
    indexing,
    with_jobs,
)
from codebase_mcp_search.entrypoints.projects import ProjectServices
from codebase_mcp_search.entrypoints.requests import index_request, resolve_repo_path


class Codebase:
    """One project's index, search and task tracker, backed by a configured container."""

    def __init__(
        self,
        project_id: str,
        *,
        services: ProjectServices,
        tasks: TaskService,
        jobs: JobService,
        database_name: str | None,
    ) -> None:
        self.project_id = project_id
        self.database_name = database_name
        """The Postgres schema holding this project (None with the memory store)."""
        self._services = services
        store = services.stores.chunk_store(project_id)
        self._catalog: RepositoryCatalog = store
        self._snapshots: FileSnapshots = store
        self._tasks = tasks
        self._jobs = jobs

    async def indexing_service(self) -> IndexingService:
        """The indexing service (its embedder is chosen and opened on the first call)."""
        return await self._services.indexing(self.project_id)

    async def search_service(self) -> SearchService:
        """The search service (its embedder is resolved when a search first needs it)."""
        return await self._services.search(self.project_id)

    async def index(
        self,
        request: IndexRequest | str | Path,
        *,
        name: str | None = None,
        force: bool = False,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
        vectors: bool = True,
    ) -> IndexResult:
        """Bring the index of a repository up to date (incrementally): ``request``, or the
        directory at that path (with ``name`` and ``force``). Both layers: the lexical one
        (searchable once written), then the vectors of the chunks without one; with
        ``vectors=False`` only the first (``start_job(..., kind=JobKind.SEMANTIC)`` leaves
        the rest to a worker), and the result counts the vectors still missing.

        When another process indexes the same repository, ``wait`` queues behind it (progress
        phase ``waiting``); ``wait=False`` raises ``RepositoryBusy`` instead. ``counts`` is
        kept current while the lexical run goes (see ``RunCounts``). An interrupted run of the
        vectors keeps what it stored: the next run embeds only what is missing.
        """
        if not isinstance(request, IndexRequest):
            request = index_request(request, name=name, force=force)
        service = await self.indexing_service()
        result = await service.index(
            request, progress=progress, cancel=cancel, wait=wait, counts=counts
        )
        if not (vectors and result.vectors_missing):
            return result
        built = await service.build_vectors(request, progress=progress, cancel=cancel, wait=wait)
        return with_vectors(result, built)

    async def build_vectors(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> VectorResult:
        """Build the semantic layer of an indexed repository: embed its chunks still without
        a vector, batch by batch, each stored as it is done (an interrupted run keeps them;
        the next embeds only what is missing). With ``wait`` it queues behind another run
        building them (progress phase ``waiting``); else ``RepositoryBusy``."""
        service = await self.indexing_service()
        return await service.build_vectors(
            request, progress=progress, cancel=cancel, wait=wait, counts=counts
        )

    async def named(self, request: IndexRequest) -> IndexRequest:
        """``request`` with the repository's current name when it asks for none (a job shows
        it, and a run under it renames nothing); a first index: the root's last part."""
        if request.name is not None:
            return request
        existing = await self._catalog.find_repository(request.root)
        name = existing.name if existing is not None else PurePath(request.root).name
        return request.model_copy(update={"name": name or request.root})

    async def start_job(
        self,
        request: IndexRequest | str | Path,
        *,
        force: bool = False,
        kind: JobKind = JobKind.LEXICAL,
    ) -> Job:
        """Queue a background job building ``kind``'s layer (a worker runs it: the MCP
        server's own, or ``codebase-mcp worker``; a lexical job queues the semantic one after
        it); ``DuplicateJob`` while one of that kind is pending, running or blocked for the
        repository in this project."""
        if not isinstance(request, IndexRequest):
            request = index_request(request, force=force)
        return await self._jobs.start(self.project_id, await self.named(request), kind)

    async def search(
        self, query: SearchQuery | str, **options: Unpack[SearchOptions]
    ) -> SearchResult:
        """Ranked chunks for ``query``, or for a natural-language or identifier text with
        ``options`` (``mode``, ``limit``, ``repository_id``, ``file_type``, ``directory``,
        ``language``; None: the default). ``REPOSITORY_NOT_FOUND`` for an unknown repository
        filter, in every mode."""
        if not isinstance(query, SearchQuery):
            query = SearchQuery.build(query, **options)
        if query.filters.repository_id is not None:
            await self._catalog.get_repository(query.filters.repository_id)
        service = await self.search_service()
        result = await service.search(query)
        if result.hits and not result.semantic_coverage:
            return result
        # A partial answer says why: the jobs building what the search could not yet see.
        active = await self._jobs.active(self.project_id)
        wanted = query.filters.repository_id
        running = [j for j in active if wanted is None or repository_id_for(j.repo_path) == wanted]
        names = set(result.indexing_repositories)
        if not result.hits:
            names.update(indexing(running))
        return result.model_copy(
            update={
                "semantic_coverage": with_jobs(result.semantic_coverage, running),
                "indexing_repositories": sorted(names),
            }
        )

    async def semantic_layers(self, repositories: list[Repository]) -> dict[str, SemanticLayer]:
        """Where the semantic layer of each of ``repositories`` indexed with a model stands,
        by repository id: its vectors of its chunks, and the job building the rest."""
        layers = [SemanticLayer.of(r) for r in repositories if r.embedding_model is not None]
        if any(r.vectors_missing for r in repositories):
            layers = with_jobs(layers, await self._jobs.active(self.project_id))
        return {layer.repository_id: layer for layer in layers}

    async def refresh(
        self,
        repository_id: str | None = None,
        *,
        only: Callable[[str], bool] | None = None,
        progress: Callable[[int, int], RunProgress] | None = None,
    ) -> list[IndexResult]:
        """Bring the repositories a search would cover up to date (incrementally: cheap when
        nothing changed). A repository whose root is gone, or whose path ``only`` refuses,
        is left as it is (its hits come back ``stale`` where they changed). ``progress(i, n)``
        gives the tracker of the i-th of n runs."""
        if repository_id is not None:
            repos = [await self.repository(repository_id)]
        else:
            repos = await self._catalog.list_repositories()
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
            tracker = progress(i, len(present)) if progress is not None else None
            request = IndexRequest(root=repo.path, name=repo.name)
            counts = tracker.counts if tracker is not None else None
            result = await service.index(request, progress=tracker, counts=counts)
            if result.vectors_missing:  # the vectors of what changed: a worker's job
                job = await self.queue_vectors(request)
                result = result.model_copy(update={"vectors_job_id": job})
            results.append(result)
        return results

    async def queue_vectors(self, request: IndexRequest) -> str:
        """The id of the semantic job of ``request``'s repository (a worker builds its
        vectors): queued now, or the one already active."""
        try:
            return (await self._jobs.start(self.project_id, request, JobKind.SEMANTIC)).id
        except DuplicateJob as e:
            return str(e.details["job_id"])

    async def semantic_layer(self, root: str) -> SemanticLayer | None:
        """Where the semantic layer of the repository at ``root`` (a job's ``repo_path``)
        stands; None when it is not indexed, or indexed without a model."""
        repo = await self._catalog.find_repository(root)
        if repo is None:
            return None
        return (await self.semantic_layers([repo])).get(repo.id)

    async def repositories(self) -> list[Repository]:
        """Indexed repositories with their file and chunk counts."""
        return await self._catalog.list_repositories()

    async def repository(self, repository_id: str) -> Repository:
        """The repository with this id, or ``RepositoryNotFound``."""
        return await self._catalog.get_repository(_repository_id(repository_id))

    async def repository_for_path(self, path: str | Path, field: str = "repo") -> Repository | None:
        """The indexed repository rooted at ``path``, if any."""
        return await self._catalog.find_repository(resolve_repo_path(path, field))

    async def chunks(self, repository_id: str) -> list[Chunk]:
        """Every chunk of a repository as indexed, by (file_path, start_line, end_line)."""
        return await self._snapshots.chunks(_repository_id(repository_id))

    async def delete_repository(self, repository_id: str) -> None:
        """Remove a repository and all its chunks."""
        await self._catalog.delete_repository(_repository_id(repository_id))

    @property
    def tasks(self) -> TaskService:
        """The task tracker of this project."""
        return self._tasks

    @property
    def jobs(self) -> JobService:
        """Background indexing jobs (the queue is shared by every project of the store)."""
        return self._jobs


def with_vectors(result: IndexResult, built: VectorResult) -> IndexResult:
    """A lexical run's result with the counts of the vectors built after it."""
    return result.model_copy(
        update={
            "chunks_embedded": built.chunks_embedded,
            "embeddings_cached": result.embeddings_cached + built.embeddings_cached,
            "chunks_truncated": built.chunks_truncated,
            "vectors_missing": built.vectors_missing,
            "duration_seconds": round(result.duration_seconds + built.duration_seconds, 3),
        }
    )


def _repository_id(value: object) -> str:
    return check_uuid(value, "repository_id", "a repository id", Hint.REPOSITORY_ID)
