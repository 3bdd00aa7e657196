"""What the benchmarks share: a project opened over the product's container, its store, and
search services wired otherwise (another ranking or fusion configuration, a store that records
or replays retrievals) through the container's own factories, so that a benchmark measures
the product's code and the product carries no hook for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.ports import ChunkStore, Embedder
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import SearchService
from codebase_mcp_search.entrypoints.facade import Codebase, Workspaces, open_workspaces
from codebase_mcp_search.entrypoints.projects import resolved
from codebase_mcp_search.entrypoints.settings import Settings


@dataclass(frozen=True)
class Bench:
    """One project of a running container."""

    workspaces: Workspaces
    codebase: Codebase

    @property
    def store(self) -> ChunkStore:
        return self.workspaces.services.stores.chunk_store(self.codebase.project_id)

    async def embedder(self) -> Embedder | None:
        """The embedder the container chose (loaded now if need be)."""
        embedder: Embedder | None = await resolved(self.workspaces.container.embedder())
        return embedder

    async def search_service(
        self,
        *,
        store: Any = None,
        ranking: RankingConfig | None = None,
        fusion: dict[str, Any] | None = None,
        embedder: Embedder | None = None,
        stem_weight: float | None = None,
    ) -> SearchService:
        """The product's search service, over ``store`` (default: the project's), with
        ``ranking``, the fusion defaults updated by ``fusion``, and ``embedder`` (say, one
        answering precomputed query vectors) and lexical mode's ``stem_weight`` where given."""
        container = self.workspaces.container
        overrides: dict[str, Any] = {"store": store if store is not None else self.store}
        if embedder is not None:
            overrides["embedder"] = embedder
        if ranking is not None:
            overrides["ranking"] = ranking
        if stem_weight is not None:
            overrides["stem_weight"] = stem_weight
        if fusion:
            base: FusionConfig = await resolved(container.fusion())
            overrides["fusion"] = base.model_copy(update=fusion)
        service: SearchService = await resolved(container.search_service(**overrides))
        return service


@asynccontextmanager
async def open_bench(settings: Settings, project_id: str | None = None) -> AsyncIterator[Bench]:
    async with open_workspaces(settings) as ws:
        yield Bench(ws, await ws.codebase(project_id))
