"""The read of an unfiltered search's terms: their blocks, or their packed values with what
corrects them (``TERMS`` and ``PACKED_DATA``, ``terms_row``), decoded by ``terms.terms_of``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.terms import (
    HeldLengths,
    Lengths,
    Read,
    has_packed,
)
from codebase_mcp_search.adapters.postgres.sql import Statement

# Unfiltered: ``BLOCKS``, but each term packed by the project's last build
# (chunk_store.packing) read from its packed value (pt), with the writes since the build (the
# seqs of chunks deleted, gone; the blocks of that term among the chunks inserted, b) to
# correct it by, as long as no write that logs nothing came since, and the writes since are
# few enough ($2 deleted chunks, $3 inserting writes at most): otherwise every term is read
# from its blocks (terms.terms_of). The other terms as in ``BLOCKS``, in key order (each path
# then sums a chunk's terms in one order: terms.combined).
TERMS = Statement("""
    WITH st AS (
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
        SELECT q.term, d.df
        FROM q CROSS JOIN LATERAL (
            SELECT sum(p.n) AS df FROM {s}.postings p WHERE p.term = q.term
        ) d
        WHERE d.df > 0 AND NOT EXISTS (SELECT FROM pt WHERE pt.term = q.term)
        ORDER BY q.term
    ), b AS (
        SELECT p.term, p.n, p.chunks, p.tfs, p.doc_lens
        FROM w CROSS JOIN LATERAL (
            SELECT p.term, p.first, p.n, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
            WHERE p.term = w.term OFFSET 0
        ) p
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
           -- Unless the process holds them: the lengths of the build ($4: the one it holds).
           (SELECT pb.lengths FROM {s}.packed_build pb
            WHERE EXISTS (SELECT FROM pt) AND pb.build <> $4) AS p_lengths,
           bl.*
    FROM st, (
        SELECT array_agg(b.term) AS terms, array_agg(b.n) AS sizes, sum(b.n) AS postings,
               string_agg(array_send(b.chunks), ''::bytea) AS chunks,
               string_agg(array_send(b.tfs), ''::bytea) AS tfs,
               string_agg(array_send(b.doc_lens), ''::bytea) AS doc_lens
        FROM b
    ) bl
""")
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
    db: ProjectSession, keys: Sequence[int], lengths: HeldLengths
) -> tuple[Mapping[str, Any] | None, Lengths | None]:
    """The ``TERMS`` row of the term ``keys``, with the packed values of its packed terms
    (``terms.Read``) and the lengths of their build (held in ``lengths``, or sent again when
    let go since the statement asked without them)."""
    for build in (lengths.build(), -1, -1):
        row = await db.conn.fetchrow(
            db.sql(TERMS), list(keys), PACKED_MAX_GONE, PACKED_MAX_WRITES, build
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
