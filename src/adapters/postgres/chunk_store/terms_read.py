"""The read of a search's terms: their blocks, or their packed values with what corrects them
(``TERMS`` and ``PACKED_DATA``, ``terms_row``), decoded by ``terms.terms_of``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.terms import (
    HeldLengths,
    Lengths,
    Read,
    has_packed,
)
from codebase_mcp_search.adapters.postgres.sql import Statement

# The project's statistics; each query term of $1 (term keys) with a posting, and for each
# either its blocks (passing a filter: ``{matching}`` and ``{join}``; terms, sizes and each
# array column's binary values concatenated) and its document frequency, or, when the
# project's last packed build (chunk_store.packing) holds it, its place among the packed terms
# (pt: read by ``PACKED_DATA``) and what corrects it: the seqs of the chunks deleted since the
# build (gone) and its blocks among the chunks inserted since (b), whatever the filter (its
# document frequency is the project's; ``terms.terms_of`` cuts it to the filter's chunks,
# ``matches``). Packed terms are read so while no write that logs nothing came since the
# build, and while the writes since are few enough to correct by ($2 deleted chunks, $3
# inserting writes at most); otherwise every term from its blocks. The build's chunk lengths
# come along unless the process holds them ($4: the build it holds them for). The terms read
# from their blocks are in key order (each path then sums a chunk's terms in one order).
_TERMS = """
    WITH {matching}st AS (
        -- LIMIT 1: the one row, also to the planner. Until autovacuum first analyses
        -- the table (frequently updated, never vacuumed by us) it guesses over a
        -- thousand rows, multiplied w's estimate by as many, and read all postings of
        -- the terms instead of the filter's blocks.
        SELECT n_docs, total_len, generation, logged, tableoid AS epoch
        FROM {s}.corpus_stats LIMIT 1
    ), q AS (
        SELECT DISTINCT unnest($1::int8[]) AS term
    ), pt AS MATERIALIZED (
        SELECT t.term, t.n
        FROM {s}.packed_build pb JOIN st ON st.generation - st.logged = pb.unlogged
        CROSS JOIN q JOIN {s}.packed_terms t ON t.term = q.term
        WHERE (SELECT count(*) FROM (SELECT FROM {s}.packed_gone LIMIT $2 + 1) g) <= $2
          AND (SELECT count(*) FROM (SELECT FROM {s}.packed_inserts LIMIT $3 + 1) i) <= $3
    ), r AS MATERIALIZED (
        SELECT lo, hi FROM {s}.packed_inserts WHERE EXISTS (SELECT FROM pt)
    ), w AS (
        -- Document frequencies over the whole project, from the postings index.
        SELECT q.term, d.df
        FROM q CROSS JOIN LATERAL (
            SELECT sum(p.n) AS df FROM {s}.postings p WHERE p.term = q.term
        ) d
        WHERE d.df > 0 AND NOT EXISTS (SELECT FROM pt WHERE pt.term = q.term)
        ORDER BY q.term
    ), b AS (
        -- Each term's blocks from the term index (OFFSET 0 keeps the lateral lookup from
        -- being flattened into a join: costed as random reads, the blocks of a few terms
        -- looked dearer than reading every block of a mid-sized project).
        SELECT p.term, p.n, p.chunks, p.tfs, p.doc_lens
        FROM w CROSS JOIN LATERAL (
            SELECT p.term, p.first, p.n, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
            WHERE p.term = w.term OFFSET 0
        ) p {join}
        UNION ALL
        SELECT p.term, p.n, p.chunks, p.tfs, p.doc_lens
        FROM pt CROSS JOIN LATERAL (
            -- A block's chunks are of one write: it is that write's if its first chunk is.
            SELECT p.term, p.first, p.n, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
            WHERE p.term = pt.term
              AND p.first BETWEEN (SELECT min(lo) FROM r) AND (SELECT max(hi) FROM r)
              AND EXISTS (SELECT FROM r WHERE p.first BETWEEN r.lo AND r.hi)
            OFFSET 0
        ) p
    )
    SELECT st.n_docs, st.total_len, st.generation, st.epoch,
           (SELECT array_agg(w.term ORDER BY w.term) FROM w) AS w_terms,
           (SELECT array_agg(w.df ORDER BY w.term) FROM w) AS w_dfs,
           (SELECT array_agg(pt.term ORDER BY pt.term) FROM pt) AS p_terms,
           (SELECT sum(pt.n) FROM pt) AS p_postings,
           (SELECT array_agg(g.seq) FROM {s}.packed_gone g WHERE EXISTS (SELECT FROM pt))
               AS gone,
           (SELECT pb.build FROM {s}.packed_build pb WHERE EXISTS (SELECT FROM pt)) AS p_build,
           (SELECT pb.lengths FROM {s}.packed_build pb
            WHERE EXISTS (SELECT FROM pt) AND pb.build <> $4) AS p_lengths,
           {matches} AS matches,
           bl.*
    FROM st, (
        SELECT array_agg(b.term) AS terms, array_agg(b.n) AS sizes, sum(b.n) AS postings,
               string_agg(array_send(b.chunks), ''::bytea) AS chunks,
               string_agg(array_send(b.tfs), ''::bytea) AS tfs,
               string_agg(array_send(b.doc_lens), ''::bytea) AS doc_lens
        FROM b
    ) bl
"""
TERMS = Statement(_TERMS, matching="", join="", matches="NULL::bytea")
# Filtered: the matching chunks first (from the covering path index), joined to the blocks, so
# only their postings are read. Materialised, the set can only be hashed: probing the table
# per block (the planner's choice when it underestimates a common term's postings) was far
# slower. The chunks of a block are alike in every filtered attribute (see rows.build_rows):
# the blocks to read are those whose first chunk passes. With packed terms, the matching
# chunks' seqs come along (an int8[] in its wire format).
TERMS_FILTERED = Statement(
    _TERMS,
    matching="fl AS MATERIALIZED (SELECT c.seq FROM {s}.chunks c WHERE {filter}), ",
    join="JOIN fl ON fl.seq = p.first",
    matches="""(SELECT array_send(coalesce(array_agg(fl.seq), '{{}}')) FROM fl
                WHERE EXISTS (SELECT FROM pt))""",
)
# A filter's parameters follow the four of ``TERMS``.
FILTER_PARAMS: Final = 5
# The packed values of the terms $1 of the build $2 (none if another build replaced it since
# ``TERMS`` read): each in a row of its own (aggregated into one value, each was copied twice
# more, three times the time).
PACKED_DATA = Statement(
    """SELECT t.term, t.data FROM {s}.packed_terms t JOIN {s}.packed_build pb ON pb.build = $2
       WHERE t.term = ANY($1::int8[])"""
)
# The writes since a packed build that a search corrects it by, at most: past them, it reads
# the blocks (``optimize`` packs again well before: chunk_store.packing).
PACKED_MAX_GONE: Final = 100_000
PACKED_MAX_WRITES: Final = 2_000


async def terms_row(
    db: ProjectSession, keys: Sequence[int], lengths: HeldLengths, flt: SqlFilter | None = None
) -> tuple[Mapping[str, Any] | None, Lengths | None]:
    """The ``TERMS`` row of the term ``keys`` (passing ``flt``, numbered from
    ``FILTER_PARAMS``), with the packed values of its packed terms (``terms.Read``) and the
    lengths of their build (held in ``lengths``, or sent again when let go since the
    statement asked without them)."""
    if flt is None or flt.empty:
        sql, params = db.sql(TERMS), ()
    else:
        sql, params = TERMS_FILTERED.at(db.schema, filter=flt.sql), tuple(flt.params)
    for build in (lengths.build(), -1, -1):
        row = await db.conn.fetchrow(
            sql, list(keys), PACKED_MAX_GONE, PACKED_MAX_WRITES, build, *params
        )
        if row is None or not has_packed(row):
            return row, None
        held = lengths.of(row)
        if held is None:
            continue  # let go since: asked for again
        data = await db.conn.fetch(db.sql(PACKED_DATA), row["p_terms"], row["p_build"])
        if len(data) == len(row["p_terms"]):
            return Read(row, {int(r["term"]): r["data"] for r in data}), held
        # Packed anew between the two statements: read again.
    raise RuntimeError("packed terms read without their build's lengths")
