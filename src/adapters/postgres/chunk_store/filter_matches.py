"""The chunks passing a search filter counted per ANN segment, in one pass over the covering
path index: what plans a filtered vector search (``vector_search``). ``FilterMatches`` counts
for every search; ``match_cache.KeptMatches`` keeps the counts of the filters last searched."""

from __future__ import annotations

import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import asyncpg

from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement

# The chunks with vectors passing {filter} counted per ANN bucket of seq ($1: the buckets'
# lower bounds), with the seqs of the buckets of at most ${small} of them.
_MATCHES = """
    WITH m AS MATERIALIZED (
        SELECT width_bucket(c.seq, $1::int8[]) AS b, c.seq
        FROM {s}.chunks c WHERE {vectors}{filter}
    ), n AS (SELECT b, count(*) AS n FROM m GROUP BY b)
    SELECT n.b, n.n,
           CASE WHEN n.n <= ${small} THEN ARRAY(SELECT m.seq FROM m WHERE m.b = n.b) END
               AS seqs
    FROM n
"""
# Every chunk has a vector: no condition on it.
MATCHES = Statement(_MATCHES, vectors="")
MATCHES_WITH_VECTORS = Statement(_MATCHES, vectors="c.embedding IS NOT NULL AND ")


@dataclass(frozen=True, slots=True)
class Matches:
    """Chunks passing a search filter, per ANN bucket: counts, and seqs of the small ones."""

    counts: dict[int, int]
    seqs: dict[int, array.array[int]]  # 8 bytes a match, at most exact_rows a bucket


class MatchCounter(Protocol):
    async def count(
        self,
        db: ProjectSession,
        flt: SqlFilter,
        stats: asyncpg.Record,
        segments: Sequence[tuple[int, int]],
    ) -> Matches:
        """The chunks with vectors that pass ``flt``, counted per segment (bucket i + 1 is
        segment i, the last bucket the unindexed tail), with the seqs of buckets of at most
        ``exact_rows`` matches (an exact scan then reads just those rows by key, not every row
        of the segment's range); ``stats`` is ``vector_search.PLAN_INPUTS``'s row, read in
        the caller's snapshot."""
        ...


class FilterMatches:
    """Counts the matches of every filtered search (see ``MatchCounter``)."""

    def __init__(self, exact_rows: int) -> None:
        self._exact_rows = exact_rows

    async def count(
        self,
        db: ProjectSession,
        flt: SqlFilter,
        stats: asyncpg.Record,
        segments: Sequence[tuple[int, int]],
    ) -> Matches:
        statement = MATCHES if stats["n_vectors"] == stats["n_docs"] else MATCHES_WITH_VECTORS
        bounds = [int(lo) + 1 for lo, _ in segments]
        bounds.append(int(segments[-1][1]) + 1 if segments else 1)
        small = len(flt.params) + 2
        rows = await db.conn.fetch(
            db.sql(statement, filter=flt.sql, small=small), bounds, *flt.params, self._exact_rows
        )
        return Matches(
            counts={int(r["b"]): int(r["n"]) for r in rows},
            seqs={int(r["b"]): array.array("q", r["seqs"]) for r in rows if r["seqs"] is not None},
        )
