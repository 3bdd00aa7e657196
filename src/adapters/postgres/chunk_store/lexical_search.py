"""Lexical search: exact BM25 over the postings blocks in one SQL statement, and the handling
of ties at the limit (tied scores fall to path and line, as in every store)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import asyncpg

from adapters.postgres.chunk_store.filters import SqlFilter, narrowed
from adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from adapters.postgres.chunk_store.session import ProjectSession
from codebase_core import lexical
from codebase_core.models import ScoredChunk, SearchFilters

# Extra rows a lexical top-N fetches past its limit, to see whether ties cross the limit.
TIE_ROOM = 32
# Scores closer than this (relative to the query's BM25 bound) may round to the same normalised
# score (``lexical.normalised`` keeps 9 decimals): they are ties, broken by path and line.
TIE_TOLERANCE = 2e-9


async def top_rows(
    db: ProjectSession,
    keys: Sequence[int],
    filters: SearchFilters,
    limit: int,
    *,
    count: bool = True,
) -> list[asyncpg.Record]:
    """The rows of ``lexical_sql`` for the term ``keys``: at least the top ``limit`` and every
    chunk tied with the last of them (unordered; ``ranked`` orders them); ``count``: whether
    their ``total`` counts the matches (else it is NULL)."""
    conn = db.conn
    async with contextlib.AsyncExitStack() as tx:
        if filters.repository_id is not None:
            # One snapshot for the check in narrowed and the search.
            await tx.enter_async_context(
                conn.transaction(readonly=True, isolation="repeatable_read")
            )
        flt = SqlFilter(await narrowed(db, filters), 3)
        # One top-N sort with room for ties at the limit; only when the ties run past that
        # room is everything tied with the k-th score fetched, so ties fall to path, line.
        fetch = int(limit) + TIE_ROOM
        rows = await conn.fetch(
            lexical_sql(db.s, flt, ties=False, count=count), keys, fetch, *flt.params
        )
        if len(rows) == fetch:
            # The rows come back in join order: rank their scores here.
            raws = sorted((float(r["raw"]) for r in rows), reverse=True)
            if raws[-1] >= raws[int(limit) - 1] - TIE_TOLERANCE * float(rows[0]["bound"]):
                rows = await conn.fetch(
                    lexical_sql(db.s, flt, ties=True, count=count), keys, int(limit), *flt.params
                )
    return list(rows)


def ranked(rows: Sequence[asyncpg.Record], limit: int) -> tuple[list[ScoredChunk], int | None]:
    """The top ``limit`` of ``top_rows`` by normalised score, then path and line; and the
    number of chunks that matched (None when not counted)."""
    if not rows:
        return [], 0
    counted = rows[0]["total"]
    total = None if counted is None else int(counted)
    bound = float(rows[0]["bound"])
    scored = [(lexical.normalised(float(r["raw"]), bound), r) for r in rows]
    scored.sort(key=lambda sr: (-sr[0], sr[1]["file_path"], sr[1]["start_line"]))
    # Chunks only for the rows kept: the tie room is read but never returned.
    return [ScoredChunk(chunk_of(r), sc) for sc, r in scored[:limit]], total


def lexical_sql(s: str, flt: SqlFilter, *, ties: bool, count: bool = True) -> str:
    """BM25 of every chunk holding a query term ($1: term keys), filtered; the top $2
    (``ties``: every chunk scoring within float noise of the $2-th best); ``count``: with
    the number of chunks scored (else NULL); and how many of the project's chunks have no
    vector (``unvectored``)."""
    k1, b = lexical.K1, lexical.B
    # Filtered: the matching chunks first (from the covering path index), joined to the
    # postings before scoring, so only their postings are scored. Materialised, the set
    # can only be hashed: probing the table per scored chunk (the planner's choice when
    # it underestimates a common term's postings) was far slower.
    fl = (
        ""
        if flt.empty
        else f"fl AS MATERIALIZED (SELECT c.seq FROM {s}.chunks c WHERE {flt.sql}), "
    )
    # The chunks of a block are alike in every filtered attribute (see rows.build_rows): the
    # blocks to score are those whose first chunk passes.
    only = "" if flt.empty else "JOIN fl ON fl.seq = p.first"
    if ties:
        top = """
            kth AS (SELECT raw FROM f ORDER BY raw DESC OFFSET $2 - 1 LIMIT 1),
            top AS (
                SELECT f.chunk, f.raw FROM f, bound
                WHERE f.raw * {k1p}::float8
                      >= (SELECT coalesce(min(raw), 0) FROM kth) * {k1p}::float8
                         - {tolerance}::float8 * bound.v
                ORDER BY f.raw DESC LIMIT 1000
            )"""
    else:
        top = "top AS (SELECT f.chunk, f.raw FROM f ORDER BY f.raw DESC LIMIT $2)"
    # Read once (no count, no ties), the scores are not stored: the planner feeds the
    # aggregate straight to the top-N sort instead of writing every scored chunk to a
    # tuplestore and reading it twice.
    kept = "MATERIALIZED " if count or ties else ""
    total = "(SELECT count(*) FROM f)" if count else "NULL::int8"
    return f"""
        WITH {fl}st AS (
            -- LIMIT 1: the one row, also to the planner. Until autovacuum first analyses
            -- the table (frequently updated, never vacuumed by us) it guesses over a
            -- thousand rows, multiplied w's estimate by as many, and hashed all postings
            -- of the terms to disk instead of the filter's chunks.
            SELECT n_docs::float8 AS n,
                   CASE WHEN n_docs > 0 THEN total_len::float8 / n_docs ELSE 1 END AS avg,
                   n_docs - n_vectors AS unvectored
            FROM {s}.corpus_stats LIMIT 1
        ), w AS (
            -- Document frequencies over the whole project, from the postings index; the
            -- length normalisation folded into two constants per query, typed float8: a
            -- bare decimal is numeric, and numeric arithmetic on every posting is several
            -- times dearer than float8.
            SELECT q.term, ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS idf,
                   {k1 * (1 - b)}::float8 AS k, {k1 * b}::float8 / st.avg AS m
            FROM unnest($1::int8[]) AS q(term)
            CROSS JOIN LATERAL (
                SELECT sum(p.n) AS df FROM {s}.postings p WHERE p.term = q.term
            ) d, st
            WHERE d.df > 0
        ), f AS {kept}(
            -- BM25 / (k1 + 1): idf * tf / (tf + k1 * (1 - b + b * len / avg)), summed.
            -- The blocks are unnested in the select list (one ProjectSet step), not by a
            -- function scan per block, which spooled each block first. Each term's blocks
            -- come from the term index (OFFSET 0 keeps the lateral lookup from being
            -- flattened into a join): costed as random reads, the blocks of a few terms
            -- looked dearer than reading every block of a mid-sized project, and a
            -- sequential scan of all postings took most of the statement's time.
            SELECT x.chunk, sum(x.idf * x.tf / (x.tf + x.k + x.m * x.len)) AS raw
            FROM (
                SELECT w.idf, w.k, w.m, unnest(p.chunks) AS chunk, unnest(p.tfs) AS tf,
                       unnest(p.doc_lens) AS len
                FROM w CROSS JOIN LATERAL (
                    SELECT p.first, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
                    WHERE p.term = w.term OFFSET 0
                ) p {only}
            ) x
            GROUP BY x.chunk
        ), bound AS (
            SELECT coalesce(sum(idf) * {k1 + 1.0}::float8, 0) AS v FROM w
        ), {top.format(k1p=k1 + 1.0, tolerance=TIE_TOLERANCE)}
        SELECT {SELECT_CHUNK}, top.raw * {k1 + 1.0}::float8 AS raw, bound.v AS bound,
               {total} AS total, st.unvectored
        FROM top JOIN {s}.chunks c ON c.seq = top.chunk, bound, st
    """
