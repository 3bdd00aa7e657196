"""SearchService: semantic, lexical and hybrid search over indexed chunks.

``similarity_score`` (always in [0, 1]):
- semantic: cosine similarity mapped linearly, ``(1 + cos) / 2``;
- lexical: BM25 divided by the query's BM25 upper bound (see ``codebase_core.lexical``);
- hybrid: the fused score (see ``codebase_core.fusion``), 1.0 for a chunk first in both lists.

``total_count`` (before the limit and before duplicate collapsing):
- semantic: chunks with vectors that pass the filters;
- lexical: chunks passing the filters that contain at least one query term;
- hybrid: the larger of the two (every embedded chunk is a semantic candidate).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from codebase_core import lexical
from codebase_core.errors import EmbedderUnavailable, RepositoryNotFound
from codebase_core.fusion import FusionConfig, fuse
from codebase_core.model_rule import HeldVectors, check_one_model
from codebase_core.models import (
    CONTEXT_LINES,
    Chunk,
    Location,
    Repository,
    ScoredChunk,
    SearchHit,
    SearchMode,
    SearchQuery,
    SearchResult,
    context_lines,
    split_lines,
)
from codebase_core.ports import ChunkStore, Embedder, SourceTree

A = TypeVar("A")
B = TypeVar("B")

# Two hits of one file whose line ranges share at least this fraction of the shorter range are
# "mostly the same lines"; the lower-ranked one is dropped.
OVERLAP_DROP = 0.5


async def _together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, run concurrently; if one fails, the other is cancelled (and awaited)
    and the failure is raised as is (no stray task left running, no exception group)."""
    a, b = asyncio.ensure_future(first), asyncio.ensure_future(second)
    try:
        # Whichever fails first stops the other (awaiting ``a`` then ``b`` would let ``a``
        # run on after ``b`` failed).
        await asyncio.wait((a, b), return_when=asyncio.FIRST_EXCEPTION)
        for task in (a, b):
            failure = task.exception() if task.done() and not task.cancelled() else None
            if failure is not None:
                raise failure
        return a.result(), b.result()
    except BaseException:
        for task in (a, b):
            task.cancel()
        await asyncio.gather(a, b, return_exceptions=True)
        raise


def _overlap_fraction(a: Chunk, b: Chunk) -> float:
    shared = min(a.end_line, b.end_line) - max(a.start_line, b.start_line) + 1
    if shared <= 0:
        return 0.0
    shorter = min(a.end_line - a.start_line, b.end_line - b.start_line) + 1
    return shared / shorter


class SearchService:
    """Answers search queries against a ChunkStore, embedding queries when it can."""

    def __init__(
        self,
        store: ChunkStore,
        embedder: Embedder | None,
        fusion: FusionConfig | None = None,
        source: SourceTree | None = None,
    ) -> None:
        """``source`` reads the repositories on disk to mark hits ``stale``; without it no hit
        is marked (a library user searching an index whose sources are elsewhere)."""
        self._store = store
        self._embedder = embedder
        self._fusion = fusion or FusionConfig()
        self._source = source

    @property
    def default_mode(self) -> SearchMode:
        """Hybrid when an embedder is configured, lexical otherwise."""
        return SearchMode.HYBRID if self._embedder is not None else SearchMode.LEXICAL

    async def search(self, query: SearchQuery) -> SearchResult:
        """Rank chunks for ``query``; see the module docstring for scores and counts."""
        started = time.perf_counter()
        mode = query.mode
        if self._embedder is None and mode is SearchMode.HYBRID:
            mode = SearchMode.LEXICAL
        if self._embedder is None and mode is SearchMode.SEMANTIC:
            raise EmbedderUnavailable(
                "semantic search needs an embedder: set CODEBASE_MCP_EMBEDDER "
                "(e.g. 'hash') and re-index, or search with mode='lexical'"
            )
        # Candidates per retrieval: fusion needs its depth; one list alone needs only slack for
        # the near-duplicates that collapsing drops.
        depth = query.limit * 3
        if mode is SearchMode.HYBRID:
            depth = max(self._fusion.depth(query.limit), depth)
        semantic: list[ScoredChunk] = []
        lexical_hits: list[ScoredChunk] = []
        sem_total = lex_total = 0

        async def dense() -> tuple[list[ScoredChunk], int]:
            embedder = self._embedder
            assert embedder is not None

            async def vectors() -> tuple[list[ScoredChunk], int]:
                vector = await embedder.embed_query(query.text)
                return await self._store.vector_search(vector, query.filters, depth)

            # The model check beside the search (a pooled store runs them on two
            # connections); a mismatch raises and the search's result is dropped.
            _, (raw, total) = await _together(self._check_models(query, embedder), vectors())
            cosine_to_unit = [
                ScoredChunk(chunk=s.chunk, score=min(1.0, max(0.0, (1.0 + s.score) / 2.0)))
                for s in raw
            ]
            return cosine_to_unit, total

        async def sparse() -> tuple[list[ScoredChunk], int]:
            terms = lexical.query_terms(query.text)
            if not terms:
                return [], 0
            return await self._store.lexical_search(terms, query.filters, depth)

        if mode is SearchMode.HYBRID:
            # Both retrievals at once (a pooled store runs them on two connections).
            (semantic, sem_total), (lexical_hits, lex_total) = await _together(dense(), sparse())
        elif mode is SearchMode.SEMANTIC:
            semantic, sem_total = await dense()
        else:
            lexical_hits, lex_total = await sparse()
        if mode is SearchMode.HYBRID:
            ranked = fuse(semantic, lexical_hits, self._fusion)
            total = max(sem_total, lex_total)
        elif mode is SearchMode.SEMANTIC:
            ranked, total = semantic, sem_total
        else:
            ranked, total = lexical_hits, lex_total
        hits = await self._build_hits(self._collapse(ranked, query.limit))
        return SearchResult(
            query=query.text,
            mode=mode,
            hits=hits,
            total_count=total,
            latency_ms=round((time.perf_counter() - started) * 1000.0, 2),
        )

    async def _check_models(self, query: SearchQuery, embedder: Embedder) -> None:
        repos: Sequence[Repository]
        if query.filters.repository_id is not None:
            repos = [await self._store.get_repository(query.filters.repository_id)]
        else:
            repos = await self._store.list_repositories()
        for repo in repos:
            if repo.chunk_count:
                held = HeldVectors(
                    model=repo.embedding_model,
                    dimension=repo.embedding_dimension,
                    repository=repo.name,
                    repository_id=repo.id,
                    path=repo.path,
                )
                check_one_model(held, embedder.model, embedder.dimension)

    @staticmethod
    def _collapse(
        ranked: Sequence[ScoredChunk], limit: int
    ) -> list[tuple[ScoredChunk, list[Location]]]:
        """Drop near-duplicate ranges of one file; merge identical text found in several files."""
        kept: list[tuple[ScoredChunk, list[Location]]] = []
        by_hash: dict[str, list[Location]] = {}
        by_file: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
        for sc in ranked:
            c = sc.chunk
            same_text = by_hash.get(c.content_hash)
            if same_text is not None:
                same_text.append(
                    Location(
                        repository_id=c.repository_id,
                        file_path=c.file_path,
                        start_line=c.start_line,
                        end_line=c.end_line,
                    )
                )
                continue
            if len(kept) >= limit:
                continue
            file_key = (c.repository_id, c.file_path)
            if any(_overlap_fraction(c, o) >= OVERLAP_DROP for o in by_file[file_key]):
                continue
            others: list[Location] = []
            by_hash[c.content_hash] = others
            by_file[file_key].append(c)
            kept.append((sc, others))
        return kept

    async def _build_hits(
        self, kept: Sequence[tuple[ScoredChunk, list[Location]]]
    ) -> list[SearchHit]:
        wanted: dict[str, set[str]] = defaultdict(set)
        for sc, _ in kept:
            wanted[sc.chunk.repository_id].add(sc.chunk.file_path)
        texts: dict[tuple[str, str], str] = {}
        stale: set[tuple[str, str]] = set()
        for repo_id, paths in wanted.items():
            # Both at once (a pooled store answers on two connections).
            found, changed = await _together(
                self._store.file_texts(repo_id, sorted(paths)),
                self._changed_on_disk(repo_id, paths),
            )
            texts.update(((repo_id, path), text) for path, text in found.items())
            stale.update((repo_id, p) for p in changed)
        # A file with several hits is split once; one hit reads around itself (see context_lines).
        per_file = Counter((sc.chunk.repository_id, sc.chunk.file_path) for sc, _ in kept)
        split: dict[tuple[str, str], list[str]] = {}
        hits: list[SearchHit] = []
        for sc, others in kept:
            c = sc.chunk
            key = (c.repository_id, c.file_path)
            text = texts.get(key, "")
            if per_file[key] > 1 and key not in split:
                split[key] = split_lines(text)
            before, after = context_lines(
                text, c.content, c.start_line, c.end_line, CONTEXT_LINES, split.get(key)
            )
            hits.append(
                SearchHit(
                    chunk_id=c.id,
                    repository_id=c.repository_id,
                    file_path=c.file_path,
                    language=c.language,
                    symbol=c.symbol,
                    kind=c.kind,
                    start_line=c.start_line,
                    end_line=c.end_line,
                    content=c.content,
                    similarity_score=sc.score,
                    context_before=before,
                    context_after=after,
                    other_locations=others,
                    stale=(c.repository_id, c.file_path) in stale,
                )
            )
        return hits

    async def _changed_on_disk(self, repo_id: str, paths: set[str]) -> set[str]:
        if self._source is None:
            return set()
        try:
            repo, indexed = await _together(
                self._store.get_repository(repo_id), self._store.file_hashes(repo_id, sorted(paths))
            )
        except RepositoryNotFound:  # deleted while this search ran
            return set(paths)
        return await self._source.changed(repo.path, indexed, repo.indexed_at)
