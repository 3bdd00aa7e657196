"""Every project (workspace) of one store, each opened as a ``Codebase`` on first use, over one
container: one database pool, one embedder and one job queue shared by all projects."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import CoreError, Hint, ValidationFailed
from codebase_mcp_search.core.models import (
    Job,
    ProjectInfo,
    SemanticLayer,
    TaskQuery,
    check_project_id,
)
from codebase_mcp_search.core.models.projects import same_but_case
from codebase_mcp_search.core.services import JobService
from codebase_mcp_search.entrypoints.codebase import Codebase
from codebase_mcp_search.entrypoints.container import Container
from codebase_mcp_search.entrypoints.embedders import EmbedderChoice
from codebase_mcp_search.entrypoints.projects import ProjectServices, resolved
from codebase_mcp_search.entrypoints.settings import Settings

log = logging.getLogger("codebase_mcp")


class Workspaces:
    """Every project of one store (see the module doc); ``services`` resolves a project's
    services, ``jobs`` is the store's one job queue, ``container`` the composition root they
    come from (its factories take overrides: a service wired otherwise, say to compare
    ranking configurations on one index)."""

    def __init__(
        self,
        container: Container,
        settings: Settings,
        services: ProjectServices,
        jobs: JobService,
    ) -> None:
        self.container = container
        self.settings = settings
        self.services = services
        self.jobs = jobs
        self.default_project = check_project_id(settings.project)
        self._codebases: dict[str, Codebase] = {}

    def project_id(self, requested: str | None) -> str:
        """The project a request names (the default one when it names none), validated: a
        blank id is refused, not taken as the default."""
        return check_project_id(self.default_project if requested is None else requested)

    async def codebase(self, project_id: str | None = None, *, create: bool = True) -> Codebase:
        """The project's ``Codebase`` (the default project when ``project_id`` is None).

        A project is created on first use; with ``create=False`` an unknown project other than
        the default raises ``ValidationFailed`` instead (so that reading with a mistyped id
        does not leave an empty workspace behind).
        """
        pid = self.project_id(project_id)
        found = self._codebases.get(pid)
        if found is not None:
            return found
        stores = self.services.stores
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
            raise ValidationFailed("project_id", pid, "no such project", hint=Hint.PROJECT)
        codebase = Codebase(
            pid,
            services=self.services,
            tasks=await self.services.tasks(pid),
            jobs=self.jobs,
            database_name=stores.database_name(pid),
        )
        return self._codebases.setdefault(pid, codebase)

    async def semantic_layer_of(self, job: Job) -> SemanticLayer | None:
        """Where the semantic layer of ``job``'s repository stands (None: indexed without a
        model, or no longer indexed, or its project gone)."""
        try:
            codebase = await self.codebase(job.project_id, create=False)
        except ValidationFailed:
            return None
        return await codebase.semantic_layer(job.repo_path)

    def database_name(self, project_id: str) -> str | None:
        """The Postgres schema of a project (None with the memory store)."""
        return self.services.stores.database_name(project_id)

    async def database_status(self, timeout_s: float = defaults.PROBE_TIMEOUT_S) -> str:
        """``ok``, ``unavailable`` (Postgres does not answer within ``timeout_s``) or
        ``memory``."""
        database = self.services.stores.database
        if database is None:
            return "memory"
        try:
            # The embedded server may need a restart: give that a few seconds more.
            async with asyncio.timeout(timeout_s * 3):
                await database.ping(timeout_s)
        except (CoreError, TimeoutError):
            return "unavailable"
        return "ok"

    async def warm_up(self) -> None:
        """Open the database pool now (starting the embedded server, on a fresh data directory
        creating it), so that no first call waits for that. A failure is left to the calls,
        which report it (and try again)."""
        database = self.services.stores.database
        if database is None:
            return
        try:
            await database.pool()
        except CoreError as e:
            log.warning("the database is not ready yet: %s", e)

    @contextlib.asynccontextmanager
    async def index_ahead(
        self, project_id: str | None, root: str, start: bool = True
    ) -> AsyncIterator[None]:
        """With ``start`` (a first index into a new data directory: every file is to chunk),
        the index of ``root`` begins while the database is created: the repository is
        scanned, its first files chunked, and the chunking workers started if it has enough
        files (``IndexingService.head_start``); the project's next index of ``root`` takes
        them. What no run took is ended on exit."""
        pool = self.container.chunking_pool()
        service = None
        try:
            if start:
                service = await self.services.indexing(self.project_id(project_id))
                service.head_start(root)
            yield
        finally:
            if service is not None:
                await service.drop_head_starts()
            await pool.close()

    async def embedder_status(self) -> str:
        """The embedder in use (``none``: lexical only); ``not loaded`` before the first index
        or search needed it, ``loading`` while it loads, ``unavailable`` if it failed."""
        provider = self.container.embedder_choice
        if not provider.initialized:
            return "not loaded"
        try:
            # Shielded: a load still in progress (the provider reads as initialised once it
            # has started) is not cancelled by this probe giving up.
            choice: EmbedderChoice = await asyncio.wait_for(
                asyncio.shield(resolved(provider())), timeout=0.2
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
        stores = self.services.stores
        sizes = await stores.sizes()
        out: list[ProjectInfo] = []
        for pid in await stores.project_ids():
            cb = await self.codebase(pid)
            repos = await cb.repositories()
            tasks = await cb.tasks.list(TaskQuery.build(limit=1))
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
