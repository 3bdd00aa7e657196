"""Vector search: the chunks matching a filter counted per ANN segment (``filter_matches``),
then per segment a walk of its HNSW index or an exact scan, and an exact search whenever the
ANN search cannot fill the limit (see ``AnnConfig`` for the strategy). ``VectorSearch`` runs
its statements for every search; ``vector_copy.VectorCopy`` answers unfiltered searches of a
small project from its vectors copied into the process, this search underneath."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import asyncpg

from codebase_mcp_search.adapters.postgres.ann import AnnConfig
from codebase_mcp_search.adapters.postgres.chunk_store.filter_matches import (
    MatchCounter,
    Matches,
)
from codebase_mcp_search.adapters.postgres.chunk_store.filters import (
    NO_FILTERS,
    SqlFilter,
    narrowed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Sql, Statement, part, union_all
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model

if TYPE_CHECKING:
    import numpy as np

# Everything a search's plan depends on, in one round trip.
PLAN_INPUTS = Statement(
    """
    SELECT (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
           st.n_docs, st.n_vectors, st.generation,
           ARRAY(SELECT lo FROM {s}.ann_segments ORDER BY lo) AS los,
           ARRAY(SELECT hi FROM {s}.ann_segments ORDER BY lo) AS his
    FROM {s}.corpus_stats st
    """
)
# Filtered statements are planned with the filter's values: a generic plan sees a directory
# range of unknown width as narrow, and would sort every match by distance instead of walking
# the graph.
CUSTOM_PLANS: Final = "SET LOCAL plan_cache_mode = force_custom_plan"
# A query vector of length zero: every chunk with a vector (passing {filter}) scores 0.
ZERO_QUERY = Statement(
    """SELECT {chunk}, 0.0::float8 AS score FROM {s}.chunks c
       WHERE c.embedding IS NOT NULL AND {filter}
       ORDER BY c.file_path, c.start_line, c.repo_id LIMIT $1""",
    chunk=SELECT_CHUNK,
)
# The exact top {limit} by cosine distance to $1 of the chunks (alias ``c``) passing {where},
# ``SELECT_CHUNK`` and ``score``, ties by path, line and repository. The distances are sorted
# with the row's key alone and the chosen rows read after: sorting whole rows copied every
# chunk's text into the sort.
_EXACT = """
    SELECT {chunk}, 1 - t.d AS score
    FROM (
        SELECT c.seq, c.embedding <=> $1 AS d, c.file_path, c.start_line, c.repo_id
        FROM {s}.chunks c WHERE {where}
        ORDER BY 2, 3, 4, 5 LIMIT {limit}
    ) t JOIN {s}.chunks c ON c.seq = t.seq
    ORDER BY t.d, t.file_path, t.start_line, t.repo_id
"""
EXACT = Statement(_EXACT, chunk=SELECT_CHUNK, where="c.embedding IS NOT NULL AND {filter}")
# ``EXACT`` unfiltered in one statement, with the plan's inputs: the top $3 of the vectors
# when there are vectors of the query's dimension ($2) and no ANN segments, or no more than
# $4 vectors; the inputs alone (chunk columns null) otherwise.
EXACT_UNFILTERED = Statement(
    """
    WITH st AS (
        SELECT (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
               n_vectors, generation,
               (SELECT count(*) FROM {s}.ann_segments) AS segments
        FROM {s}.corpus_stats
    )
    SELECT top.*, st.dimension, st.n_vectors, st.generation, st.segments
    FROM st LEFT JOIN LATERAL ({exact}) top ON true
    """,
    exact=part(
        _EXACT,
        chunk=SELECT_CHUNK,
        where="""c.embedding IS NOT NULL AND st.dimension = $2
            AND (st.segments = 0 OR st.n_vectors <= $4)""",
        limit="$3",
    ),
)
# The widest HNSW candidate list of the search's segment walks ($1), for its transaction.
EF_SEARCH: Final = "SELECT set_config('hnsw.ef_search', $1, true)"
# One branch of an ANN search: the {limit} chunks nearest $1 among those passing {where},
# ordered by {order} (the index's ordering: a walk of the segment's HNSW index; with "+ 0",
# not: an exact scan).
_BRANCH = """(SELECT c.seq, c.embedding <=> $1 AS d FROM {s}.chunks c
    WHERE {where} ORDER BY {order} LIMIT {limit})"""
_WALK = "c.embedding <=> $1"
_SCAN = "(c.embedding <=> $1) + 0"
# A segment's range, as the predicate of its partial index: {lo} and {hi} are constants.
_SEGMENT = "c.seq > {lo} AND c.seq <= {hi}"
_TAIL = "c.seq > {hi} AND c.embedding IS NOT NULL"
_SEQS = "c.seq = ANY(${seqs}::int8[])"
WALK_SEGMENT = Statement(_BRANCH, where=_SEGMENT, order=_WALK)
WALK_FILTERED = Statement(_BRANCH, where=_SEGMENT + " AND {filter}", order=_WALK)
SCAN_FILTERED = Statement(_BRANCH, where=_SEGMENT + " AND {filter}", order=_SCAN)
SCAN_SEQS = Statement(_BRANCH, where=_SEQS, order=_SCAN)
TAIL = Statement(_BRANCH, where=_TAIL, order=_WALK)
TAIL_FILTERED = Statement(_BRANCH, where=_TAIL + " AND {filter}", order=_WALK)
TAIL_SEQS = Statement(_BRANCH, where=_SEQS, order=_WALK)
# The top {limit} of the branches, with their chunks, ties by path, line and repository.
ANN_TOP = Statement(
    """
    WITH top AS (SELECT * FROM ({branches}) u ORDER BY d LIMIT {limit})
    SELECT {chunk}, 1 - top.d AS score
    FROM top JOIN {s}.chunks c ON c.seq = top.seq
    ORDER BY top.d, c.file_path, c.start_line, c.repo_id
    """,
    chunk=SELECT_CHUNK,
)


Session = Callable[[], AbstractAsyncContextManager[ProjectSession]]


@dataclass(frozen=True, slots=True)
class Scanned:
    """What an unfiltered exact search of every vector saw: the project's generation and
    number of vectors."""

    generation: int
    n_vectors: int


class VectorSearch:
    """Vector search of one project's chunks (filter matches counted by ``matches``)."""

    def __init__(self, session: Session, ann: AnnConfig, matches: MatchCounter) -> None:
        self._session = session
        self._ann = ann
        self.matches = matches
        # Whether the project was last seen searched exactly (no segments over many vectors):
        # only then is the one-statement search tried first (a large project keeps its
        # segments, and would pay the attempt's round trip on every search).
        self.exact_seen = True

    async def search(
        self, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        """The top ``limit`` chunks with their cosine similarity, and the number of chunks with
        vectors passing ``filters``, in one snapshot."""
        hits, total, _ = await self.search_scanned(query, filters, limit)
        return hits, total

    async def search_scanned(
        self, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int, Scanned | None]:
        """``search``, and what it saw if it was an unfiltered exact search of every vector
        (in one statement)."""
        import numpy as np

        async with self._session() as db:
            if self.exact_seen and filters == NO_FILTERS and float(np.linalg.norm(query)) > 0:
                found = await self._exact_unfiltered(db, query, limit)
                if found is not None:
                    rows, scanned = found
                    return _scored(rows), scanned.n_vectors, scanned
            rows, total = await self._search(db, query, filters, limit)
            return _scored(rows), total, None

    async def _search(
        self, db: ProjectSession, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[asyncpg.Record], int]:
        import numpy as np

        conn = db.conn
        async with conn.transaction(readonly=True, isolation="repeatable_read"):
            flt = SqlFilter(await narrowed(db, filters), 2)
            stats = await conn.fetchrow(db.sql(PLAN_INPUTS))
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
                await conn.execute(CUSTOM_PLANS)
                matches = await self.matches.count(db, flt, stats, segments)
                total = sum(matches.counts.values())
            if total == 0:
                return [], 0
            if not float(np.linalg.norm(query)) > 0:
                rows = await conn.fetch(db.sql(ZERO_QUERY, filter=flt.sql), limit, *flt.params)
                return list(rows), total
            rows = []
            if segments and total > self._ann.exact_rows:
                rows = await self._ann_search(db, query, flt, limit, segments, matches)
            if len(rows) < min(limit, total):
                exact = db.sql(EXACT, filter=flt.sql, limit=int(limit))
                rows = await conn.fetch(exact, query, *flt.params)
        return list(rows), total

    async def _exact_unfiltered(
        self, db: ProjectSession, query: np.ndarray[Any, Any], limit: int
    ) -> tuple[list[asyncpg.Record], Scanned] | None:
        """An unfiltered search answered by an exact scan in one statement (one snapshot):
        the plan's inputs and the top rows together, where ``search`` spends a transaction and
        four round trips. None when the plan is another: no vectors of the query's dimension
        (``search`` says why), or ANN segments over more than ``exact_rows`` vectors."""
        rows = await db.conn.fetch(
            db.sql(EXACT_UNFILTERED),
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
        scanned = Scanned(int(first["generation"]), int(first["n_vectors"]))
        return [r for r in rows if r["id"] is not None], scanned

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
        lim = int(limit)
        ann = self._ann
        ef = max(ann.ef_search_min, math.ceil(lim * 1.5))
        params: list[Any] = [query, *flt.params]

        def seqs_of(bucket: int) -> int | None:
            """The parameter holding the bucket's matching seqs, if they are known."""
            seqs = matches.seqs.get(bucket) if matches is not None else None
            if seqs is None:
                return None
            params.append(seqs.tolist())
            return len(params)

        branches: list[Sql] = []
        for i, (lo, hi) in enumerate(segments):
            bounds = {"lo": int(lo), "hi": int(hi), "limit": lim}
            if matches is None:
                branches.append(db.piece(WALK_SEGMENT, **bounds))
                continue
            n = matches.counts.get(i + 1, 0)
            if n == 0:
                continue
            need = math.ceil(lim * 1.5 * (int(hi) - int(lo)) / n)
            # A walk with a candidate list of ``need`` visits about need * 2m vectors (each
            # candidate's neighbours): no fewer than scanning the matches exactly.
            if n <= ann.exact_segment_rows or need > ann.ef_search_max or n <= need * 2 * ann.m:
                p = seqs_of(i + 1)
                if p is None:
                    branches.append(db.piece(SCAN_FILTERED, **bounds, filter=flt.sql))
                else:
                    branches.append(db.piece(SCAN_SEQS, seqs=p, limit=lim))
            else:
                branches.append(db.piece(WALK_FILTERED, **bounds, filter=flt.sql))
                ef = max(ef, need)
        tail_bucket = len(segments) + 1
        top = int(segments[-1][1])
        if matches is None:
            branches.append(db.piece(TAIL, hi=top, limit=lim))
        elif matches.counts.get(tail_bucket, 0):
            p = seqs_of(tail_bucket)
            if p is None:
                branches.append(db.piece(TAIL_FILTERED, hi=top, filter=flt.sql, limit=lim))
            else:
                branches.append(db.piece(TAIL_SEQS, seqs=p, limit=lim))
        await db.conn.execute(EF_SEARCH, str(min(ef, ann.ef_search_max)))
        rows = await db.conn.fetch(
            db.sql(ANN_TOP, branches=union_all(branches), limit=lim), *params
        )
        return list(rows)


def _scored(rows: Sequence[asyncpg.Record]) -> list[ScoredChunk]:
    return [ScoredChunk.of(chunk_of(r), float(r["score"])) for r in rows]
