"""Vector search: the chunks matching a filter counted per ANN segment (remembered in a small
filter cache), then per segment a walk of its HNSW index or an exact scan, and an exact search
whenever the ANN search cannot fill the limit (see ``AnnConfig`` for the strategy)."""

from __future__ import annotations

import array
import collections
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np

from codebase_mcp_search.adapters.postgres.ann import AnnConfig
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.filters import (
    NO_FILTERS,
    SqlFilter,
    narrowed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model

# Filters whose matches a store remembers (see VectorSearch.matches).
MATCHES_CACHED = 32


@dataclass(frozen=True, slots=True)
class Matches:
    """Chunks passing a search filter, per ANN bucket: counts, and seqs of the small ones."""

    counts: dict[int, int]
    seqs: dict[int, array.array[int]]  # 8 bytes a match, at most exact_rows a bucket


class VectorSearch:
    """Vector search of one project's chunks, with its cache of filter matches and, for a
    small project, the copy of its vectors that answers unfiltered searches."""

    def __init__(self, ann: AnnConfig, copy: VectorCopy | None, cache: ChunkCache) -> None:
        self._ann = ann
        self.copy = copy
        self.chunks = cache
        self.cache: collections.OrderedDict[tuple[Any, ...], Matches] = collections.OrderedDict()
        # Whether the project was last seen searched exactly (no segments over many vectors):
        # only then is the one-statement search tried first (a large project keeps its
        # segments, and would pay the attempt's round trip on every search).
        self.exact_seen = True

    def drop_copy(self) -> None:
        """Forget the copy of the vectors (the next searches read another)."""
        if self.copy is not None:
            self.copy.drop()

    async def copied(
        self, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int] | None:
        """What ``search`` gives, from the copy of the vectors (on a connection of its own,
        if it needs one); None when the copy cannot answer (see ``VectorCopy``)."""
        if self.copy is None or filters != NO_FILTERS or not float(np.linalg.norm(query)) > 0:
            return None
        return await self.copy.search(query, limit, self.chunks)

    async def search(
        self, db: ProjectSession, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        """The top ``limit`` chunks with their cosine similarity, and the number of chunks with
        vectors passing ``filters``, in one snapshot."""
        if self.exact_seen and filters == NO_FILTERS and float(np.linalg.norm(query)) > 0:
            found = await self._exact_unfiltered(db, query, limit)
            if found is not None:
                return _scored(found[0]), found[1]
        rows, total = await self._search(db, query, filters, limit)
        return _scored(rows), total

    async def _search(
        self, db: ProjectSession, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[asyncpg.Record], int]:
        conn, s = db.conn, db.s
        async with conn.transaction(readonly=True, isolation="repeatable_read"):
            flt = SqlFilter(await narrowed(db, filters), 2)
            # Everything the plan depends on, in one round trip.
            stats = await conn.fetchrow(
                f"""
                SELECT (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
                       st.n_docs, st.n_vectors, st.generation,
                       ARRAY(SELECT lo FROM {s}.ann_segments ORDER BY lo) AS los,
                       ARRAY(SELECT hi FROM {s}.ann_segments ORDER BY lo) AS his
                FROM {s}.corpus_stats st
                """
            )
            stored = stats["dimension"]
            if stored is None:
                return [], 0
            check_one_model(HeldVectors(model=None, dimension=int(stored)), None, query.shape[0])
            all_vectors: int = stats["n_vectors"]
            segments = list(zip(stats["los"], stats["his"], strict=True))
            self.exact_seen = not segments or all_vectors <= self._ann.exact_rows
            # Filtered: the matches per segment (see matches). Unfiltered: the maintained
            # counter (counting every vector costs more than the search).
            matches: Matches | None = None
            if flt.empty:
                total = all_vectors
            else:
                # Filtered statements are planned with the filter's values: a generic plan
                # sees a directory range of unknown width as narrow, and would sort every
                # match by distance instead of walking the graph.
                await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                matches = await self.matches(db, flt, stats, segments)
                total = sum(matches.counts.values())
            if total == 0:
                return [], 0
            if not float(np.linalg.norm(query)) > 0:
                rows = await conn.fetch(
                    f"SELECT {SELECT_CHUNK}, 0.0::float8 AS score FROM {s}.chunks c "
                    f"WHERE c.embedding IS NOT NULL AND {flt.sql} "
                    "ORDER BY c.file_path, c.start_line LIMIT $1",
                    limit,
                    *flt.params,
                )
                return list(rows), total
            rows = []
            if segments and total > self._ann.exact_rows:
                rows = await self._ann_search(db, query, flt, limit, segments, matches)
            if len(rows) < min(limit, total):
                rows = await conn.fetch(
                    exact_sql(s, f"c.embedding IS NOT NULL AND {flt.sql}", f"{int(limit)}"),
                    query,
                    *flt.params,
                )
        return list(rows), total

    async def _exact_unfiltered(
        self, db: ProjectSession, query: np.ndarray[Any, Any], limit: int
    ) -> tuple[list[asyncpg.Record], int] | None:
        """An unfiltered search answered by an exact scan in one statement (one snapshot):
        the plan's inputs and the top rows together, where ``search`` spends a transaction and
        four round trips. None when the plan is another: no vectors of the query's dimension
        (``search`` says why), or ANN segments over more than ``exact_rows`` vectors."""
        s = db.s
        where = (
            "c.embedding IS NOT NULL AND st.dimension = $2 "
            "AND (st.segments = 0 OR st.n_vectors <= $4)"
        )
        rows = await db.conn.fetch(
            f"""
            WITH st AS (
                SELECT (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
                       n_vectors, generation,
                       (SELECT count(*) FROM {s}.ann_segments) AS segments
                FROM {s}.corpus_stats
            )
            SELECT top.*, st.dimension, st.n_vectors, st.generation, st.segments
            FROM st LEFT JOIN LATERAL ({exact_sql(s, where, "$3")}) top ON true
            """,
            query,
            str(query.shape[0]),
            int(limit),
            self._ann.exact_rows,
        )
        if not rows:
            return None
        first = rows[0]
        exact = first["segments"] == 0 or first["n_vectors"] <= self._ann.exact_rows
        if first["dimension"] != str(query.shape[0]) or not exact:
            return None
        if self.copy is not None:
            self.copy.searched(int(first["generation"]), int(first["n_vectors"]), query.shape[0])
        return [r for r in rows if r["id"] is not None], int(first["n_vectors"])

    async def matches(
        self,
        db: ProjectSession,
        flt: SqlFilter,
        stats: asyncpg.Record,
        segments: Sequence[tuple[int, int]],
    ) -> Matches:
        """The chunks with vectors that pass ``flt``, counted per segment (bucket i + 1 is
        segment i, the last bucket the unindexed tail), with the seqs of buckets of at most
        ``exact_rows`` matches (an exact scan then reads just those rows by key, not every row
        of the segment's range), from one pass over the covering path index.

        Remembered per (filter, segments, generation): a generation is moved on by every write
        of chunk rows, so what one snapshot counted holds for every snapshot of the same
        generation, and repeated searches of a directory skip the pass, as a search engine's
        filter cache does.
        """
        key = (flt.sql, tuple(flt.params), tuple(segments), int(stats["generation"]))
        cache = self.cache
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
        vec = "" if stats["n_vectors"] == stats["n_docs"] else "c.embedding IS NOT NULL AND "
        bounds = [int(lo) + 1 for lo, _ in segments]
        bounds.append(int(segments[-1][1]) + 1 if segments else 1)
        small = len(flt.params) + 2
        rows = await db.conn.fetch(
            f"""
            WITH m AS MATERIALIZED (
                SELECT width_bucket(c.seq, $1::int8[]) AS b, c.seq
                FROM {db.s}.chunks c WHERE {vec}{flt.sql}
            ), n AS (SELECT b, count(*) AS n FROM m GROUP BY b)
            SELECT n.b, n.n,
                   CASE WHEN n.n <= ${small} THEN ARRAY(SELECT m.seq FROM m WHERE m.b = n.b) END
                       AS seqs
            FROM n
            """,
            bounds,
            *flt.params,
            self._ann.exact_rows,
        )
        found = Matches(
            counts={int(r["b"]): int(r["n"]) for r in rows},
            seqs={int(r["b"]): array.array("q", r["seqs"]) for r in rows if r["seqs"] is not None},
        )
        cache[key] = found
        while len(cache) > MATCHES_CACHED:
            cache.popitem(last=False)
        return found

    async def _ann_search(
        self,
        db: ProjectSession,
        query: np.ndarray[Any, Any],
        flt: SqlFilter,
        limit: int,
        segments: Sequence[tuple[int, int]],
        matches: Matches | None,
    ) -> list[asyncpg.Record]:
        """Top ``limit`` over the segments' HNSW indexes plus an exact scan of the tail.

        With filters (``matches``), a segment with no match is skipped, one with few matches
        (or so few that HNSW would need a huge candidate list, since it filters after the
        graph walk, or about as many vectors as it holds matches) is scanned exactly, and
        ``hnsw.ef_search`` is widened by the lowest share of matches among the segments walked
        by HNSW. An exact scan reads the matching rows by key when their seqs are known, else
        it filters the segment's range.
        """
        s = db.s
        lim = int(limit)
        ann = self._ann
        ef = max(ann.ef_search_min, math.ceil(lim * 1.5))
        params: list[Any] = [query, *flt.params]

        def exact(bucket: int, where: str) -> str:
            seqs = matches.seqs.get(bucket) if matches is not None else None
            if seqs is None:
                return f"{where} AND {flt.sql}"
            params.append(seqs.tolist())
            return f"c.seq = ANY(${len(params)}::int8[])"

        branches: list[str] = []
        for i, (lo, hi) in enumerate(segments):
            where = f"c.seq > {int(lo)} AND c.seq <= {int(hi)}"
            order = "c.embedding <=> $1"
            if matches is not None:
                n = matches.counts.get(i + 1, 0)
                if n == 0:
                    continue
                need = math.ceil(lim * 1.5 * (int(hi) - int(lo)) / n)
                # A walk with a candidate list of ``need`` visits about need * 2m vectors
                # (each candidate's neighbours): no fewer than scanning the matches exactly.
                if n <= ann.exact_segment_rows or need > ann.ef_search_max or n <= need * 2 * ann.m:
                    where = exact(i + 1, where)
                    order = "(c.embedding <=> $1) + 0"  # not the index's ordering: exact
                else:
                    where = f"{where} AND {flt.sql}"
                    ef = max(ef, need)
            branches.append(
                f"(SELECT c.seq, c.embedding <=> $1 AS d FROM {s}.chunks c "
                f"WHERE {where} ORDER BY {order} LIMIT {lim})"
            )
        tail_bucket = len(segments) + 1
        if matches is None or matches.counts.get(tail_bucket, 0):
            where = f"c.seq > {int(segments[-1][1])} AND c.embedding IS NOT NULL"
            where = exact(tail_bucket, where) if matches is not None else where
            branches.append(
                f"(SELECT c.seq, c.embedding <=> $1 AS d FROM {s}.chunks c "
                f"WHERE {where} ORDER BY c.embedding <=> $1 LIMIT {lim})"
            )
        await db.conn.execute(f"SET LOCAL hnsw.ef_search = {min(ef, ann.ef_search_max)}")
        rows = await db.conn.fetch(
            f"""
            WITH top AS (SELECT * FROM ({" UNION ALL ".join(branches)}) u ORDER BY d LIMIT {lim})
            SELECT {SELECT_CHUNK}, 1 - top.d AS score
            FROM top JOIN {s}.chunks c ON c.seq = top.seq
            ORDER BY top.d, c.file_path, c.start_line
            """,
            *params,
        )
        return list(rows)


def _scored(rows: Sequence[asyncpg.Record]) -> list[ScoredChunk]:
    return [ScoredChunk.of(chunk_of(r), float(r["score"])) for r in rows]


def exact_sql(s: str, where: str, limit: str) -> str:
    """The exact top ``limit`` by cosine distance to $1 of the chunks (alias ``c``) passing
    ``where``, ``SELECT_CHUNK`` and ``score``, ties by path and line. The distances are sorted
    with the row's key alone and the chosen rows read after: sorting whole rows copied every
    chunk's text into the sort."""
    return f"""
        SELECT {SELECT_CHUNK}, 1 - t.d AS score
        FROM (
            SELECT c.seq, c.embedding <=> $1 AS d, c.file_path, c.start_line
            FROM {s}.chunks c WHERE {where}
            ORDER BY 2, 3, 4 LIMIT {limit}
        ) t JOIN {s}.chunks c ON c.seq = t.seq
        ORDER BY t.d, t.file_path, t.start_line
    """
