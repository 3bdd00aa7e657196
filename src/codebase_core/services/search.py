"""SearchService: semantic, lexical and hybrid search over indexed chunks.

Every mode gathers candidates, then orders them with the ranking stack
(``core.ranking``: definitions first, paths, file coherence, priors against tests and
docs for code questions, one chunk per file before a decay), so every store ranks alike. The
candidates' retrieval score, before the ranking stack:
- semantic: cosine similarity mapped linearly, ``(1 + cos) / 2``;
- lexical: BM25 divided by the query's BM25 upper bound (see ``core.lexical``);
- hybrid: the fused score (see ``core.fusion``), with fusion weights chosen by the
  query's kind (a name or a question in words).
``similarity_score`` (always in [0, 1]) is the ranking stack's score; with the stack turned
off (``RankingConfig(enabled=False)``) it is the retrieval score.

``total_count`` (before the limit and before duplicate collapsing):
- semantic: chunks with vectors that pass the filters;
- lexical: chunks passing the filters that contain at least one query term;
- hybrid: the larger of the two (every embedded chunk is a semantic candidate).

The embedder may arrive as a provider, resolved on first need: only a semantic search, or a
hybrid one whose repositories hold vectors, needs it. So a lexical search, or a hybrid search
of a project indexed without vectors, never loads a model (a hybrid search with no vectors to
compare is answered lexically, and says ``mode: lexical``).

Mixed projects: a repository indexed without vectors, beside repositories that hold them, is
ranked lexically and named in ``SearchResult.lexical_only_repositories`` until a re-index adds
its vectors. In hybrid mode its chunks enter through the lexical list, as every chunk's may.
In semantic mode a lexical search restricted to those repositories is fused with the semantic
list, with the hybrid fusion (so the scores are fused ones) and its chunks count in
``total_count``. A repository holding vectors of another model still raises ``ModelMismatch``:
its vectors cannot be compared with the query's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import EmbedderUnavailable, Hint
from codebase_mcp_search.core.fusion import FusionConfig, fuse, rescaled
from codebase_mcp_search.core.models import (
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    SearchMode,
    SearchQuery,
    SearchResult,
)
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model
from codebase_mcp_search.core.ports import Embedder, SearchStore, SourceTree
from codebase_mcp_search.core.ranking import QueryProfile, RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.services.concurrency import together
from codebase_mcp_search.core.services.hits import build_hits, collapse

# Chunks defining a queried name that the lookup adds to the candidates, at most.
DEFINITIONS_LOOKED_UP = 20

EmbedderProvider = Callable[[], Awaitable[Embedder | None]]
"""Gives the embedder in use (None: lexical search only), choosing and opening it if need be."""


def no_semantic_model() -> EmbedderUnavailable:
    """The error of a semantic search with no embedder (each interface appends the fix)."""
    return EmbedderUnavailable(
        "semantic search needs an embedding model, and none is in use (a lexical search "
        "needs none)",
        hint=Hint.SEMANTIC_MODEL,
    )


class _LazyEmbedder:
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
class _Scope:
    """The repositories a search covers that hold chunks, with vectors and without."""

    vectored: list[Repository]
    lexical_only: list[Repository]

    def by_id(self) -> dict[str, Repository]:
        return {r.id: r for r in (*self.vectored, *self.lexical_only)}


@dataclass(slots=True)
class _Dense:
    """The semantic half of a search, and what it ranked lexically instead."""

    hits: list[ScoredChunk]
    total: int
    lexical_only: list[Repository]
    repositories: dict[str, Repository]
    """The repositories listed for the search, by id (for its hits' stale check)."""
    extra: list[ScoredChunk] = field(default_factory=list)
    """Semantic mode: lexical hits of the ``lexical_only`` repositories."""
    extra_total: int = 0


class SearchService:
    """Answers search queries against a ChunkStore, embedding queries when it can."""

    def __init__(
        self,
        store: SearchStore,
        embedder: Embedder | EmbedderProvider | None,
        fusion: FusionConfig | None = None,
        source: SourceTree | None = None,
        ranking: RankingConfig | None = None,
    ) -> None:
        """``embedder``: the embedder, None for lexical search only, or an async provider of
        either, called when a search first needs it. ``source`` reads the repositories on disk
        to mark hits ``stale``; without it no hit is marked (a library user searching an index
        whose sources are elsewhere). ``ranking`` configures the ranking stack applied to
        every mode's candidates (``core.ranking``)."""
        self._store = store
        self._embedder = _LazyEmbedder(embedder)
        self._fusion = fusion or FusionConfig()
        self._source = source
        self._ranking = ranking or RankingConfig()

    async def search(self, query: SearchQuery) -> SearchResult:
        """Rank chunks for ``query``; see the module docstring for scores and counts.

        Raises ``EmbedderUnavailable`` (hint ``SEMANTIC_MODEL``) for a
        semantic search without an embedder, ``ModelMismatch`` when a repository searched
        holds vectors of another model, ``RepositoryNotFound`` for an unknown
        ``repository_id`` filter of a semantic or hybrid search.
        """
        started = time.perf_counter()
        # No mode asked: hybrid, which answers lexically where there are no vectors to compare.
        mode = query.mode or SearchMode.HYBRID
        ranking = self._ranking
        profile = analyse_query(query.text)
        fusion = self._fusion_for(profile)
        # Candidates per retrieval: fusion and the ranking stack need depth; one list alone,
        # unranked, needs only slack for the near-duplicates that collapsing drops.
        depth = query.limit * 3
        if mode is not SearchMode.LEXICAL or ranking.enabled:
            depth = max(fusion.depth(query.limit), depth)
        dense: _Dense | None = None
        lexical_hits: list[ScoredChunk] = []
        lex_total = 0
        if mode is SearchMode.HYBRID:
            # Both retrievals at once (a pooled store runs them on two connections).
            dense, (lexical_hits, lex_total) = await together(
                self._dense(query, mode, depth), self._sparse(query.text, query.filters, depth)
            )
        elif mode is SearchMode.SEMANTIC:
            dense = await self._dense(query, mode, depth)
            if dense is None:
                raise no_semantic_model()
        else:
            lexical_hits, lex_total = await self._sparse(query.text, query.filters, depth)
        if dense is None:
            # Lexical asked for, or hybrid without an embedder or without vectors to compare.
            mode, ranked, total = SearchMode.LEXICAL, lexical_hits, lex_total
        elif mode is SearchMode.HYBRID:
            ranked = fuse(dense.hits, lexical_hits, fusion)
            total = max(dense.total, lex_total)
        elif dense.extra and dense.hits:
            ranked = fuse(dense.hits, dense.extra, fusion)
            total = dense.total + dense.extra_total
        else:
            ranked = dense.hits or dense.extra
            total = dense.total + dense.extra_total
            if ranking.enabled and dense.hits:
                # Cosines of the candidates crowd into a narrow band: over their own spread,
                # they weigh against the ranking's boosts as fused and BM25 scores do.
                ranked = rescaled(ranked)
        if ranking.enabled:
            found: list[Chunk] = []
            # Only where a definition gains: names inside a sentence count embedded_factor.
            gains = profile.is_symbol or ranking.embedded_factor > 0
            if ranking.definition_lookup and profile.names and gains:
                found = await self._store.definitions(
                    profile.names, query.filters, DEFINITIONS_LOOKED_UP
                )
            ranked = rerank(ranked, profile, ranking, found)
        hits = await build_hits(
            self._store,
            self._source,
            collapse(ranked, query.limit),
            dense.repositories if dense else None,
        )
        return SearchResult(
            query=query.text,
            mode=mode,
            hits=hits,
            total_count=total,
            latency_ms=round((time.perf_counter() - started) * 1000.0, 2),
            lexical_only_repositories=sorted(r.name for r in dense.lexical_only) if dense else [],
        )

    def _fusion_for(self, profile: QueryProfile) -> FusionConfig:
        """The fusion weights for this kind of query."""
        r = self._ranking
        if not (r.enabled and r.query_type_weights and profile.is_symbol):
            return self._fusion
        return self._fusion.model_copy(
            update={
                "semantic_weight": r.symbol_semantic_weight,
                "lexical_weight": r.symbol_lexical_weight,
            }
        )

    async def _dense(self, query: SearchQuery, mode: SearchMode, depth: int) -> _Dense | None:
        """The semantic half, or None when there is none: no embedder, or (hybrid) no vectors
        in the repositories searched."""
        lazy = self._embedder
        if lazy.resolved:
            embedder = lazy.value
            if embedder is None:
                return None
            # The scope is listed and checked beside the vector search (a pooled store runs
            # them on two connections); a refusal raises and the search's result is dropped.
            (scope, (extra, extra_total)), (raw, total) = await together(
                self._checked_scope(query, mode, depth, embedder),
                self._vectors(query, embedder, depth),
            )
            if mode is SearchMode.HYBRID and not scope.vectored:
                return None
        else:
            scope = await self._scope(query)
            if mode is SearchMode.HYBRID and not scope.vectored:
                return None  # nothing to compare: no model is loaded for it
            embedder = await lazy.get()
            if embedder is None:
                return None
            _check_models(scope, embedder)
            raw, total = [], 0
            if scope.vectored:
                raw, total = await self._vectors(query, embedder, depth)
            extra, extra_total = await self._lexical_only_hits(query, mode, depth, scope)
        return _Dense(
            hits=[ScoredChunk.of(s.chunk, min(1.0, max(0.0, (1.0 + s.score) / 2.0))) for s in raw],
            total=total,
            lexical_only=scope.lexical_only,
            repositories=scope.by_id(),
            extra=extra,
            extra_total=extra_total,
        )

    async def _vectors(
        self, query: SearchQuery, embedder: Embedder, depth: int
    ) -> tuple[list[ScoredChunk], int]:
        vector = await embedder.embed_query(query.text)
        return await self._store.vector_search(vector, query.filters, depth)

    async def _checked_scope(
        self, query: SearchQuery, mode: SearchMode, depth: int, embedder: Embedder
    ) -> tuple[_Scope, tuple[list[ScoredChunk], int]]:
        scope = await self._scope(query)
        _check_models(scope, embedder)
        return scope, await self._lexical_only_hits(query, mode, depth, scope)

    async def _scope(self, query: SearchQuery) -> _Scope:
        repos: Sequence[Repository]
        if query.filters.repository_id is not None:
            repos = [await self._store.get_repository(query.filters.repository_id)]
        else:
            repos = await self._store.list_repositories()
        holding = [r for r in repos if r.chunk_count]
        return _Scope(
            vectored=[r for r in holding if r.embedding_model is not None],
            lexical_only=[r for r in holding if r.embedding_model is None],
        )

    async def _lexical_only_hits(
        self, query: SearchQuery, mode: SearchMode, depth: int, scope: _Scope
    ) -> tuple[list[ScoredChunk], int]:
        """Semantic mode: the lexical hits of the repositories without vectors (in hybrid
        mode the lexical list holds them already)."""
        if mode is not SearchMode.SEMANTIC or not scope.lexical_only:
            return [], 0
        found: list[ScoredChunk] = []
        total = 0
        for repo in scope.lexical_only:
            only = query.filters.model_copy(update={"repository_id": repo.id})
            hits, n = await self._sparse(query.text, only, depth)
            found.extend(hits)
            total += n
        # One repository's BM25 scores compare with another's: the statistics are the store's.
        found.sort(key=lambda s: (-s.score, s.chunk.file_path, s.chunk.start_line))
        return found[:depth], total

    async def _sparse(
        self, text: str, filters: SearchFilters, depth: int
    ) -> tuple[list[ScoredChunk], int]:
        terms = lexical.query_terms(text)
        if not terms:
            return [], 0
        return await self._store.lexical_search(terms, filters, depth)


def _check_models(scope: _Scope, embedder: Embedder) -> None:
    """``ModelMismatch`` unless every repository with vectors holds ``embedder``'s."""
    for repo in scope.vectored:
        held = HeldVectors(
            model=repo.embedding_model,
            dimension=repo.embedding_dimension,
            repository=repo.name,
            repository_id=repo.id,
            path=repo.path,
        )
        check_one_model(held, embedder.model, embedder.dimension)
