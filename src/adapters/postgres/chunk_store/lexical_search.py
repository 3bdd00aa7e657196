"""Lexical search: exact BM25 over the postings blocks, scored in this process.

One statement reads every block of the query's terms that passes the filters, each array
column concatenated into one binary value (the arrays' wire format), with the terms' document
frequencies over the whole project; numpy then scores every posting and sums them per chunk.
Summing in SQL hashed every matching chunk through an aggregate, most of a search's time on a
large index when a question's common words hold tens of thousands of postings; here the count
of matches comes with the scores. The top chunks come from the process's cache of chunks
(``chunk_cache``), a second statement reading those it does not hold. Ties at the limit fall
to path and line, as in every store. Without filters, the terms' postings and their BM25
contributions come from the process's ``postings_cache`` (only the terms it does not hold
are read), so a search whose terms and top chunks are held sends no statement.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
import numpy as np

from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store.blocks import decoded
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.filters import (
    NO_FILTERS,
    SqlFilter,
    narrowed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import (
    PostingsCache,
    State,
    Term,
    combined,
    terms_of,
)
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters

# Scores closer than this (relative to the query's BM25 bound) may round to the same normalised
# score (``lexical.normalised`` keeps 9 decimals): they are ties, broken by path and line.
TIE_TOLERANCE = 2e-9
# Past this many candidates beyond the limit (ties at the limit), their paths and lines are
# read first and only the chosen rows after.
TIE_ROOM = 32

# The project's statistics, the document frequency of each term of $1 (term keys) with a
# posting, and the blocks of those terms (passing a filter: ``{matching}`` and ``{join}``):
# terms, sizes, and each array column's binary values concatenated, in one row.
_BLOCKS = """
    WITH {matching}st AS (
        -- LIMIT 1: the one row, also to the planner. Until autovacuum first analyses
        -- the table (frequently updated, never vacuumed by us) it guesses over a
        -- thousand rows, multiplied w's estimate by as many, and read all postings of
        -- the terms instead of the filter's blocks.
        SELECT n_docs, total_len, generation, tableoid AS epoch
        FROM {s}.corpus_stats LIMIT 1
    ), w AS (
        -- Document frequencies over the whole project, from the postings index.
        SELECT q.term, d.df
        FROM (SELECT DISTINCT unnest($1::int8[]) AS term) q
        CROSS JOIN LATERAL (
            SELECT sum(p.n) AS df FROM {s}.postings p WHERE p.term = q.term
        ) d
        WHERE d.df > 0
    ), b AS (
        -- Each term's blocks from the term index (OFFSET 0 keeps the lateral lookup from
        -- being flattened into a join: costed as random reads, the blocks of a few terms
        -- looked dearer than reading every block of a mid-sized project).
        SELECT p.term, p.n, p.chunks, p.tfs, p.doc_lens
        FROM w CROSS JOIN LATERAL (
            SELECT p.term, p.first, p.n, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
            WHERE p.term = w.term OFFSET 0
        ) p {join}
    )
    SELECT st.n_docs, st.total_len, st.generation, st.epoch,
           (SELECT array_agg(w.term ORDER BY w.term) FROM w) AS w_terms,
           (SELECT array_agg(w.df ORDER BY w.term) FROM w) AS w_dfs,
           bl.*
    FROM st, (
        SELECT array_agg(b.term) AS terms, array_agg(b.n) AS sizes, sum(b.n) AS postings,
               string_agg(array_send(b.chunks), ''::bytea) AS chunks,
               string_agg(array_send(b.tfs), ''::bytea) AS tfs,
               string_agg(array_send(b.doc_lens), ''::bytea) AS doc_lens
        FROM b
    ) bl
"""
BLOCKS = Statement(_BLOCKS, matching="", join="")
# Filtered: the matching chunks first (from the covering path index), joined to the blocks, so
# only their postings are read. Materialised, the set can only be hashed: probing the table
# per block (the planner's choice when it underestimates a common term's postings) was far
# slower. The chunks of a block are alike in every filtered attribute (see rows.build_rows):
# the blocks to read are those whose first chunk passes.
BLOCKS_FILTERED = Statement(
    _BLOCKS,
    matching="fl AS MATERIALIZED (SELECT c.seq FROM {s}.chunks c WHERE {filter}), ",
    join="JOIN fl ON fl.seq = p.first",
)
PLACES = Statement(
    "SELECT c.seq, c.file_path, c.start_line FROM {s}.chunks c WHERE c.seq = ANY($1::int8[])"
)
# Past this many postings a search is scored in a worker thread: numpy's work on a very large
# index would hold the event loop (and every other request) for a noticeable time.
THREAD_POSTINGS = 200_000


@dataclass(frozen=True, slots=True)
class Scored:
    """Every chunk passing the filters that holds a query term, with its raw BM25."""

    seqs: np.ndarray[Any, Any]
    raw: np.ndarray[Any, Any]
    bound: float
    epoch: int  # the schema's (see chunk_cache)


Session = Callable[[], AbstractAsyncContextManager[ProjectSession]]
T = TypeVar("T")


async def search(
    session: Session,
    keys: Sequence[int],
    filters: SearchFilters,
    limit: int,
    cache: ChunkCache,
    postings: PostingsCache | None = None,
    token: Token | None = None,
) -> tuple[list[ScoredChunk], int]:
    """The top ``limit`` chunks by BM25 over the term ``keys`` passing ``filters`` (ties by
    path and line), and the number of chunks that hold a term. Without filters, and with the
    project's change ``token``, the terms' postings come from ``postings`` (read there
    first if need be)."""
    if postings is not None and token is not None and filters == NO_FILTERS:
        scored = await _held_scores(session, keys, postings, token)
        if scored is None:
            return [], 0
        return await _top(session, None, scored, limit, cache.at(scored.epoch)), len(scored.seqs)
    async with session() as db:
        # One statement scores (postings go with their chunks, in one snapshot); the chunks
        # it chooses are rows that never change, so no snapshot is shared with their read (a
        # row deleted in between is left out, as if the search had come a moment later). Only
        # a repository filter, narrowed by a read first, shares one with the scores.
        snapshot = (
            contextlib.nullcontext()
            if filters.repository_id is None
            else db.conn.transaction(readonly=True, isolation="repeatable_read")
        )
        async with snapshot:
            flt = SqlFilter(await narrowed(db, filters), 2)
            row = await db.conn.fetchrow(blocks(db.schema, flt), list(keys), *flt.params)
            scored = await _decoding(score, row)
            if scored is None:
                return [], 0
            top = await _top(session, db, scored, limit, cache.at(scored.epoch))
            return top, len(scored.seqs)


async def _held_scores(
    session: Session, keys: Sequence[int], postings: PostingsCache, token: Token
) -> Scored | None:
    """The scores of the chunks holding a term of ``keys``, from the postings held (those not
    held read first, in one statement)."""
    held = postings.held(token, keys)
    missing = [k for k in keys if k not in held]
    if missing:
        read = await _read_terms(session, missing)
        if read is None:
            return None
        epoch, generation, terms = read
        state = postings.state
        if held and (state is None or (state.epoch, state.generation) != (epoch, generation)):
            # A write came between the terms held and these (its notice not yet here): all
            # of them again, from one generation.
            read = await _read_terms(session, list(keys))
            if read is None:
                return None
            epoch, generation, terms = read
            held = {}
        postings.add(State(token, epoch, generation), terms)
        held.update(terms)
    state = postings.state
    if state is None:
        return None
    if sum(t.size for t in held.values() if t is not None) > THREAD_POSTINGS:
        found = await asyncio.to_thread(combined, held)
    else:
        found = combined(held)
    if found is None:
        return None
    seqs, raw, bound = found
    return Scored(seqs=seqs, raw=raw, bound=bound, epoch=state.epoch)


async def _read_terms(
    session: Session, keys: list[int]
) -> tuple[int, int, dict[int, Term | None]] | None:
    """The postings of ``keys`` with their contributions, and the project's epoch and
    generation, in one statement (``postings_cache.terms_of``)."""
    async with session() as db:
        row = await db.conn.fetchrow(db.sql(BLOCKS), keys)
    return await _decoding(terms_of, row, keys)


async def _decoding(work: Callable[..., T], row: asyncpg.Record | None, *args: Any) -> T:
    """``work(row, *args)``: in a worker thread when the row holds more than
    ``THREAD_POSTINGS`` postings, else here."""
    if row is not None and row["postings"] is not None and row["postings"] > THREAD_POSTINGS:
        return await asyncio.to_thread(work, row, *args)
    return work(row, *args)


def blocks(schema: str, flt: SqlFilter) -> str:
    """The statement reading the blocks of the terms $1 that pass ``flt`` (``BLOCKS``)."""
    if flt.empty:
        return BLOCKS.at(schema)
    return BLOCKS_FILTERED.at(schema, filter=flt.sql)


def score(row: asyncpg.Record | None) -> Scored | None:
    """The chunks of a ``BLOCKS`` row with their raw BM25 (as ``lexical.term_score`` sums
    it), or None when no block matched."""
    found = decoded(row)
    if found is None:
        return None
    seqs, inverse = np.unique(found.chunks, return_inverse=True)
    raw = np.bincount(inverse, weights=found.contrib, minlength=len(seqs))
    return Scored(
        seqs=seqs, raw=raw, bound=lexical.upper_bound(found.idf_of.values()), epoch=found.epoch
    )


async def _top(
    session: Session,
    db: ProjectSession | None,
    scored: Scored,
    limit: int,
    cache: ChunkCache,
) -> list[ScoredChunk]:
    """The chunks of the top ``limit`` of ``scored`` by normalised score, then path and
    line (rows not held read on ``db``, or on a connection of ``session``'s)."""
    raw, bound = scored.raw, scored.bound
    n = len(raw)
    k = min(int(limit), n)
    if k <= 0:
        return []
    kth = float(np.partition(raw, n - k)[n - k])
    # Every chunk that may round to the k-th's normalised score or above.
    picked = np.flatnonzero(raw >= kth - TIE_TOLERANCE * bound)
    seqs = scored.seqs[picked].tolist()
    normal = {
        s: lexical.normalised(float(r), bound)
        for s, r in zip(seqs, raw[picked].tolist(), strict=True)
    }
    if len(seqs) > k + TIE_ROOM:
        # Many ties: their paths and lines first (read for those not held), then the chosen.
        held = cache.held(seqs)
        places = {s: (c.file_path, c.start_line) for s, c in held.items()}
        missing = [s for s in seqs if s not in held]
        if missing:
            async with _on(session, db) as on:
                rows = await on.conn.fetch(on.sql(PLACES), missing)
            places.update({r["seq"]: (r["file_path"], r["start_line"]) for r in rows})
        # The seq last: a path and line held in two repositories orders alike every time.
        seqs = sorted(places, key=lambda s: (-normal[s], *places[s], s))[:k]
    chunks = cache.held(seqs)
    if len(chunks) < len(seqs):
        async with _on(session, db) as on:
            chunks = await cache.chunks(on, seqs, scored.epoch)
    ordered = sorted(
        chunks, key=lambda s: (-normal[s], chunks[s].file_path, chunks[s].start_line, s)
    )
    return [ScoredChunk(chunks[s], normal[s]) for s in ordered[:k]]


def _on(session: Session, db: ProjectSession | None) -> AbstractAsyncContextManager[ProjectSession]:
    """``db`` if the caller holds one, else a connection of ``session``'s."""
    return contextlib.nullcontext(db) if db is not None else session()
