"""What a search covers: the repositories it lists, how far each one's two layers are built,
and the embedder it may need (resolved only when a search first needs it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import cast

from codebase_mcp_search.core.errors import EmbedderUnavailable, Hint, ValidationFailed
from codebase_mcp_search.core.models import Repository, SearchQuery, SemanticLayer
from codebase_mcp_search.core.models.text import relative_inside
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model
from codebase_mcp_search.core.ports import Embedder, SearchStore

EmbedderProvider = Callable[[], Awaitable[Embedder | None]]
"""Gives the embedder in use (None: lexical search only), choosing and opening it if need be."""


def no_semantic_model() -> EmbedderUnavailable:
    """The error of a semantic search with no embedder (each interface appends the fix)."""
    return EmbedderUnavailable(
        "semantic search needs an embedding model, and none is in use (a lexical search "
        "needs none)",
        hint=Hint.SEMANTIC_MODEL,
    )


class LazyEmbedder:
    """An embedder given as is, or by a provider called on first need (again after a failure)."""

    def __init__(self, source: Embedder | EmbedderProvider | None) -> None:
        # An embedder is told from a provider by its type (an isinstance check against the
        # protocol would read its properties, which an embedder not yet opened may refuse).
        self._provider: EmbedderProvider | None = None
        self._value: Embedder | None = None
        if source is not None and getattr(type(source), "embed_query", None) is None:
            self._provider = cast(EmbedderProvider, source)
        else:
            self._value = cast(Embedder | None, source)
        self._lock = asyncio.Lock()

    @property
    def resolved(self) -> bool:
        return self._provider is None

    @property
    def value(self) -> Embedder | None:
        """The embedder, once ``resolved``."""
        return self._value

    async def get(self) -> Embedder | None:
        async with self._lock:
            if self._provider is not None:
                self._value = await self._provider()
                self._provider = None
        return self._value


@dataclass(frozen=True, slots=True)
class Scope:
    """The repositories a search covers, by how far their layers are built."""

    listed: list[Repository]

    @property
    def holding(self) -> list[Repository]:
        """Those with chunks (searchable lexically)."""
        return [r for r in self.listed if r.chunk_count]

    @property
    def vectored(self) -> list[Repository]:
        """Those holding vectors to compare with the query's."""
        return [r for r in self.holding if r.embedding_model is not None and r.vector_count]

    @property
    def unvectored(self) -> list[Repository]:
        """Those none of whose chunks holds a vector: ranked lexically."""
        return [r for r in self.holding if r.embedding_model is None or not r.vector_count]

    @property
    def partial(self) -> list[Repository]:
        """Those holding vectors for some of their chunks, not all."""
        return [r for r in self.vectored if r.vectors_missing]

    @property
    def lexical_only(self) -> list[Repository]:
        """Those indexed without an embedding model: no vector is coming for them."""
        return [r for r in self.holding if r.embedding_model is None]

    @property
    def modelled(self) -> list[Repository]:
        """Those whose vectors are (or are being) built with a model: it must be the query's."""
        return [r for r in self.holding if r.embedding_model is not None]

    def coverage(self) -> list[SemanticLayer]:
        """The semantic layers still being built, by repository name."""
        return [SemanticLayer.of(r) for r in self.holding if r.vectors_missing]

    def indexing(self) -> list[str]:
        """Names of the repositories whose first indexing run has not finished."""
        return [r.name for r in self.listed if r.indexed_at is None]

    def by_id(self) -> dict[str, Repository]:
        return {r.id: r for r in self.holding}


def check_models(scope: Scope, embedder: Embedder) -> None:
    """``ModelMismatch`` unless every repository with a model holds ``embedder``'s."""
    for repo in scope.modelled:
        held = HeldVectors(
            model=repo.embedding_model,
            dimension=repo.embedding_dimension,
            repository=repo.name,
            repository_id=repo.id,
            path=repo.path,
        )
        check_one_model(held, embedder.model, embedder.dimension)


async def located(store: SearchStore, query: SearchQuery) -> SearchQuery:
    """``query`` with its absolute directory (``within``) turned into filters: the
    repository whose root holds it (the innermost, where roots nest) and the directory
    relative to that root. ``ValidationFailed`` when no repository searched holds it."""
    if query.within is None:
        return query
    repos: Sequence[Repository]
    if query.filters.repository_id is not None:
        repos = [await store.get_repository(query.filters.repository_id)]
    else:
        repos = await store.list_repositories()
    for repo in sorted(repos, key=lambda r: -len(r.path)):
        rel = relative_inside(query.within, repo.path)
        if rel is not None:
            filters = query.filters.model_copy(
                update={"repository_id": repo.id, "directory": rel or None}
            )
            return query.model_copy(update={"filters": filters, "within": None})
    where = (
        f"the repository searched ({repos[0].path})"
        if query.filters.repository_id is not None
        else "an indexed repository"
    )
    raise ValidationFailed(
        "directory",
        query.within,
        f"is not inside {where}: give a path inside a repository's root, or one relative "
        "to the root (e.g. 'src/api')",
    )
