"""SearchService: semantic, lexical and hybrid search over indexed chunks.

Every mode gathers candidates, then orders them with the ranking stack
(``core.ranking``: definitions first, paths, file coherence, priors against tests and
docs for code questions, one chunk per file before a decay), so every store ranks alike. The
candidates' retrieval score, before the ranking stack:
- semantic: cosine similarity mapped linearly, ``(1 + cos) / 2``;
- lexical: BM25 divided by the query's BM25 upper bound (see ``core.lexical``); in lexical
  mode, and in a hybrid search that ranks as lexical (no vectors to compare, or an abstaining
  semantic list), each query word's other forms count too, as one term a word
  (``core.stems``);
- hybrid: the fused score (see ``core.fusion``), with fusion weights chosen by the
  query's kind (a name, a question in words that names code, or one that names none); lexical
  mode's list and scores when the semantic candidates score too alike to tell apart
  (``core.fusion.abstains``).
A lexical list (lexical mode's, or the one fused) also holds the best chunk of each of the few
files whose path holds most of the question's words, when its BM25 did not reach the list
(``services.search.path_files``).
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

Repositories without vectors for some or all of their chunks: one indexed without a model
(named in ``SearchResult.lexical_only_repositories``), or one whose semantic layer is still
being built (listed in ``SearchResult.semantic_coverage``). A chunk without a vector is scored
by its lexical evidence alone, in every mode that compares vectors (``core.fusion``): hybrid
fuses it as the lexical list scores it, so with no vectors at all hybrid ranks exactly as
lexical (and says ``mode: lexical``); semantic mode merges the lexical hits of the chunks
without a vector with the semantic list, each by its own evidence, and counts them in
``total_count``. A repository whose vectors are of another model still raises
``ModelMismatch``: its vectors cannot be compared with the query's. A repository whose first
indexing run has not finished is named in ``SearchResult.indexing_repositories``: its files
are searchable as they are written.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from codebase_mcp_search.core import defaults, lexical, stems
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.fusion import (
    FusionConfig,
    abstains,
    fuse,
    lexical_led,
    merged,
    rescaled,
)
from codebase_mcp_search.core.models import (
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    SearchMode,
    SearchQuery,
    SearchResult,
    StemGroup,
)
from codebase_mcp_search.core.ports import Embedder, SearchStore, SourceTree
from codebase_mcp_search.core.ranking import QueryProfile, RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.services.concurrency import together
from codebase_mcp_search.core.services.hits import build_hits, collapse, extended
from codebase_mcp_search.core.services.search.candidates import Dense, Pool, fusion_for
from codebase_mcp_search.core.services.search.path_files import PathFiles
from codebase_mcp_search.core.services.search.scope import (
    EmbedderProvider,
    LazyEmbedder,
    Scope,
    check_models,
    located,
    no_semantic_model,
)

# Chunks defining a queried name that the lookup adds to the candidates, at most.
DEFINITIONS_LOOKED_UP = 20


class SearchService:
    """Answers search queries against a ChunkStore, embedding queries when it can."""

    def __init__(
        self,
        store: SearchStore,
        embedder: Embedder | EmbedderProvider | None,
        fusion: FusionConfig | None = None,
        source: SourceTree | None = None,
        ranking: RankingConfig | None = None,
        stem_weight: float = defaults.LEXICAL_STEM_WEIGHT,
    ) -> None:
        """``embedder``: the embedder, None for lexical search only, or an async provider of
        either, called when a search first needs it. ``source`` reads the repositories on disk
        to mark hits ``stale``; without it no hit is marked (a library user searching an index
        whose sources are elsewhere). ``ranking`` configures the ranking stack applied to
        every mode's candidates (``core.ranking``). ``stem_weight``: a lexical search asks for
        each query word's stem group (``core.stems``) at this weight; 0 asks for none."""
        if not stem_weight >= 0:
            raise ValidationFailed("stem_weight", stem_weight, "must be 0 or more (0: none)")
        self._store = store
        self._embedder = LazyEmbedder(embedder)
        self._fusion = fusion or FusionConfig()
        self._source = source
        self._ranking = ranking or RankingConfig()
        self._stem_weight = stem_weight
        self._path_files = PathFiles(store, self._ranking)

    async def search(self, query: SearchQuery) -> SearchResult:
        """Rank chunks for ``query``; see the module docstring for scores and counts.

        Raises ``EmbedderUnavailable`` (hint ``SEMANTIC_MODEL``) for a
        semantic search without an embedder, ``ModelMismatch`` when a repository searched
        holds vectors of another model, ``RepositoryNotFound`` for an unknown
        ``repository_id`` filter.
        """
        started = time.perf_counter()
        query = await located(self._store, query)
        # No mode asked: hybrid, which answers lexically where there are no vectors to compare.
        mode = query.mode or SearchMode.HYBRID
        profile = analyse_query(query.text)
        fusion = fusion_for(self._fusion, self._ranking, profile)
        # Candidates per retrieval: the same for any limit (``FusionConfig.candidates``), so a
        # larger limit only adds answers after the first ones.
        depth = fusion.depth(query.limit)
        pool = await self._ranked(query, mode, profile, fusion, depth)
        kept = collapse(pool.ranked, query.limit)
        if len(kept) < query.limit and pool.total > depth:
            # Near-duplicates collapsed the pool below the limit, and the lists hold more: the
            # answers of a deeper pool follow the first ones, which they never reorder.
            deeper = await self._ranked(query, mode, profile, fusion, 2 * depth)
            kept = collapse(extended(pool.ranked, deeper.ranked), query.limit)
        scope = pool.scope
        hits = await build_hits(self._store, self._source, kept, scope.by_id())
        return SearchResult(
            query=query.text,
            mode=pool.mode,
            hits=hits,
            total_count=pool.total,
            latency_ms=round((time.perf_counter() - started) * 1000.0, 2),
            lexical_only_repositories=(
                sorted(r.name for r in scope.lexical_only) if pool.dense else []
            ),
            # A lexical search asked for compares no vectors: how many exist is no news to it.
            semantic_coverage=scope.coverage() if query.mode is not SearchMode.LEXICAL else [],
            indexing_repositories=scope.indexing(),
            repositories_searched=len(scope.listed),
        )

    async def _ranked(
        self,
        query: SearchQuery,
        mode: SearchMode,
        profile: QueryProfile,
        fusion: FusionConfig,
        depth: int,
    ) -> Pool:
        """The candidates of ``depth`` per retrieval, ranked, with what the result says."""
        ranking = self._ranking
        dense: Dense | None = None
        asked = False  # hybrid: whether the lexical list was asked for beside the vectors
        lexical_hits: list[ScoredChunk] = []
        lex_total = 0
        if mode is SearchMode.HYBRID:
            # With no vectors in the scope the search ranks as a lexical one (below): its list
            # is asked for once, with stem groups, and no model is loaded.
            scope = await self._scope(query)
            # No embedder (a provider that gave none counts once called): nothing to compare.
            known_none = self._embedder.resolved and self._embedder.value is None
            asked = bool(scope.vectored) and not known_none
            if asked:
                # Both retrievals at once (a pooled store runs them on two connections).
                (scope, dense), (lexical_hits, lex_total) = await together(
                    self._dense(query, mode, depth, scope),
                    self._sparse(query.text, query.filters, depth),
                )
        elif mode is SearchMode.SEMANTIC:
            scope, dense = await self._dense(query, mode, depth)
            if dense is None:
                raise no_semantic_model()
        else:
            scope, (lexical_hits, lex_total) = await together(
                self._scope(query), self._sparse(query.text, query.filters, depth, stemmed=True)
            )
        if dense is None:
            # Lexical asked for, or hybrid without an embedder or without vectors to compare:
            # then ranked as a lexical search is, its words' other forms asked for too (a
            # hybrid search whose embedder provider gave none beside vectors asks for its
            # list again, once). Over a semantic layer still being built the fused list asks
            # for none: with them, hybrid at a quarter of the vectors scored lower
            # (bench/README.md "round nine").
            if mode is SearchMode.HYBRID and (not asked or self._stem_weight > 0):
                lexical_hits, lex_total = await self._sparse(
                    query.text, query.filters, depth, stemmed=True
                )
            lexical_hits = await self._named_files(lexical_hits, query, profile, scope)
            mode, ranked, total = SearchMode.LEXICAL, lexical_hits, lex_total
        elif mode is SearchMode.HYBRID:
            if abstains(dense.hits, lexical_hits, fusion):
                # The model separates nothing among its candidates: ranked as lexical is,
                # its words' other forms counted too (asked for again: abstaining is rare).
                if self._stem_weight > 0:
                    lexical_hits, lex_total = await self._sparse(
                        query.text, query.filters, depth, stemmed=True
                    )
                lexical_hits = await self._named_files(lexical_hits, query, profile, scope)
                ranked = lexical_led(dense.hits, lexical_hits)
            else:
                lexical_hits = await self._named_files(
                    lexical_hits, query, profile, scope, stemmed=False
                )
                unvectored = await self._unvectored(scope, lexical_hits)
                ranked = fuse(dense.hits, lexical_hits, fusion, unvectored)
            total = max(dense.total, lex_total)
        else:
            total = dense.total + dense.extra_total
            if dense.extra and dense.hits:
                ranked = merged(dense.hits, dense.extra, fusion)
            else:
                ranked = dense.hits or dense.extra
                if ranking.enabled and dense.hits:
                    # Cosines of the candidates crowd into a narrow band: over their own
                    # spread, they weigh against the ranking's boosts as fused and BM25
                    # scores do.
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
        return Pool(ranked, mode, total, scope, dense is not None)

    async def _dense(
        self, query: SearchQuery, mode: SearchMode, depth: int, known: Scope | None = None
    ) -> tuple[Scope, Dense | None]:
        """The scope (``known``, or listed), and the semantic half or None when there is
        none: no embedder, or (hybrid) no vectors in the repositories searched."""
        lazy = self._embedder
        if lazy.resolved:
            embedder = lazy.value
            if embedder is None:
                return known or await self._scope(query), None
            # The scope is listed and checked beside the vector search (a pooled store runs
            # them on two connections); a refusal raises and the search's result is dropped.
            (scope, (extra, extra_total)), (raw, total) = await together(
                self._checked_scope(query, mode, depth, embedder, known),
                self._vectors(query, embedder, depth),
            )
            if mode is SearchMode.HYBRID and not scope.vectored:
                return scope, None
        else:
            scope = known or await self._scope(query)
            if mode is SearchMode.HYBRID and not scope.vectored:
                return scope, None  # nothing to compare: no model is loaded for it
            embedder = await lazy.get()
            if embedder is None:
                return scope, None
            check_models(scope, embedder)
            raw, total = [], 0
            if scope.vectored:
                raw, total = await self._vectors(query, embedder, depth)
            extra, extra_total = await self._unvectored_hits(query, mode, depth, scope)
        return scope, Dense(
            hits=[ScoredChunk.of(s.chunk, min(1.0, max(0.0, (1.0 + s.score) / 2.0))) for s in raw],
            total=total,
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
        self,
        query: SearchQuery,
        mode: SearchMode,
        depth: int,
        embedder: Embedder,
        known: Scope | None = None,
    ) -> tuple[Scope, tuple[list[ScoredChunk], int]]:
        scope = known or await self._scope(query)
        check_models(scope, embedder)
        return scope, await self._unvectored_hits(query, mode, depth, scope)

    async def _scope(self, query: SearchQuery) -> Scope:
        repos: Sequence[Repository]
        if query.filters.repository_id is not None:
            repos = [await self._store.get_repository(query.filters.repository_id)]
        else:
            repos = await self._store.list_repositories()
        return Scope(list(repos))

    async def _unvectored(self, scope: Scope, hits: Sequence[ScoredChunk]) -> Collection[str]:
        """Of the lexical ``hits``, the ids of chunks without a vector: those of repositories
        without any, and those the store finds none for in repositories still being built
        (asked only then: a complete semantic layer costs no lookup)."""
        if not scope.unvectored and not scope.partial:
            return ()
        without = {r.id for r in scope.unvectored}
        partial = {r.id for r in scope.partial}
        ids = {s.chunk.id for s in hits if s.chunk.repository_id in without}
        asked = [s.chunk.id for s in hits if s.chunk.repository_id in partial]
        if asked:
            ids |= await self._store.without_vectors(asked)
        return ids

    async def _unvectored_hits(
        self, query: SearchQuery, mode: SearchMode, depth: int, scope: Scope
    ) -> tuple[list[ScoredChunk], int]:
        """Semantic mode: the lexical hits of the chunks without a vector (in hybrid mode the
        lexical list holds them already)."""
        if mode is not SearchMode.SEMANTIC or not (scope.unvectored or scope.partial):
            return [], 0
        found: list[ScoredChunk] = []
        total = 0
        for repo in (*scope.unvectored, *scope.partial):
            only = query.filters.model_copy(update={"repository_id": repo.id})
            hits, n = await self._sparse(query.text, only, depth)
            if repo.vector_count:
                missing = await self._store.without_vectors([h.chunk.id for h in hits])
                hits = [h for h in hits if h.chunk.id in missing]
                n = len(hits)
            found.extend(hits)
            total += n
        # One repository's BM25 scores compare with another's: the statistics are the store's.
        found.sort(key=ScoredChunk.store_order)
        return found[:depth], total

    async def _sparse(
        self, text: str, filters: SearchFilters, depth: int, *, stemmed: bool = False
    ) -> tuple[list[ScoredChunk], int]:
        """The lexical list; ``stemmed``: with each query word's stem group (lexical mode
        only: fused with the semantic list, the groups cost hybrid search more than they
        bring, bench/README.md "round nine")."""
        terms, groups = self._lexical_query(text, stemmed)
        if not terms:
            return [], 0
        if not groups:
            return await self._store.lexical_search(terms, filters, depth)
        return await self._store.lexical_search(terms, filters, depth, groups)

    def _lexical_query(self, text: str, stemmed: bool) -> tuple[list[str], list[StemGroup]]:
        """A lexical search's terms, and (``stemmed``) its stem groups."""
        terms = lexical.query_terms(text)
        if not stemmed or self._stem_weight <= 0:
            return terms, []
        return terms, [StemGroup(forms, self._stem_weight) for forms in stems.groups(terms)]

    async def _named_files(
        self,
        hits: list[ScoredChunk],
        query: SearchQuery,
        profile: QueryProfile,
        scope: Scope,
        *,
        stemmed: bool = True,
    ) -> list[ScoredChunk]:
        """A lexical list with the files the question names by their path (``path_files``),
        each scored as the list is: with its stem groups when ``stemmed``."""
        if not self._path_files.enabled:
            return hits
        terms, groups = self._lexical_query(query.text, stemmed)
        return await self._path_files.added(
            hits, profile, terms, groups, query.filters, scope.listed
        )
