"""Lexical search: exact BM25 over the postings, scored in this process.

One statement reads the query's terms (``terms_read.TERMS``): the blocks that pass the
filters, each array column concatenated into one binary value (the arrays' wire format), with
the terms' document frequencies over the whole project, or a large project's packed terms
and what corrects them (a second statement reads their values); numpy then scores the
postings and sums them per chunk (plain Python for a small row of blocks in a process without
numpy: ``blocks.plain``), only for the chunks that may reach the top when the postings are
many (``sums.ranked``). Summing in SQL hashed every matching chunk through an aggregate, most
of a search's time on a large index when a question's common words hold tens of thousands of
postings; here the count of matches comes with the scores. The top chunks come from
``Chunks`` (a second statement reads those not at hand). Ties at the limit fall to path and
line, as in every store. ``postings_cache.HeldPostings`` answers searches without filters
from the terms' postings it keeps, with this search's ``top``. A search with stem groups reads
their terms with the query's, in the same statement, decodes them all (``terms.terms_of``) and
merges each group's into one more term (``stem_terms``) before summing; one without groups is
the search above, untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import (
    decoded,
    plain,
    plain_row,
    summed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import Chunks
from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter, narrowed
from codebase_mcp_search.adapters.postgres.chunk_store.session import OnDemand, ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.stem_terms import (
    Group,
    grouped,
    plain_sums,
    read_keys,
)
from codebase_mcp_search.adapters.postgres.chunk_store.sums import TIE_TOLERANCE, combined, ranked
from codebase_mcp_search.adapters.postgres.chunk_store.terms import (
    HeldLengths,
    Lengths,
    Term,
    has_packed,
    terms_of,
)
from codebase_mcp_search.adapters.postgres.chunk_store.terms_read import FILTER_PARAMS, terms_row
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters

if TYPE_CHECKING:
    import numpy as np

# Past this many candidates beyond the limit (ties at the limit), their paths and lines are
# read first and only the chosen rows after.
TIE_ROOM = 32

# The project's generation and the chunks passing a filter, at most {most} (from the
# covering path index), in one snapshot.
FILTER_SEQS = Statement(
    """SELECT st.epoch, st.generation,
              ARRAY(SELECT c.seq FROM {s}.chunks c WHERE {filter} LIMIT {most}) AS seqs
       FROM (SELECT generation, tableoid AS epoch FROM {s}.corpus_stats LIMIT 1) st"""
)

# Past this many postings a search is scored in a worker thread: numpy's work on a very large
# index would hold the event loop (and every other request) for a noticeable time.
THREAD_POSTINGS = 200_000


@dataclass(frozen=True, slots=True)
class Scored:
    """Every chunk passing the filters that holds a query term, with its raw BM25: numpy
    arrays, or lists (``blocks.plain``), seqs ascending; or, when ``total`` is given (the
    number of chunks holding a term), only those that may reach the top of the search's
    limit (``sums.ranked``)."""

    seqs: np.ndarray[Any, Any] | list[int]
    raw: np.ndarray[Any, Any] | list[float]
    bound: float
    epoch: int  # the schema's (see chunk_cache)
    total: int | None = None

    @property
    def count(self) -> int:
        """The number of chunks holding a query term."""
        return len(self.seqs) if self.total is None else self.total


Session = Callable[[], AbstractAsyncContextManager[ProjectSession]]
T = TypeVar("T")


class LexicalSearch:
    """BM25 search of one project's chunks, its statement run for every search (the lengths
    of a packed build held in ``lengths``, or read with every search)."""

    def __init__(
        self, session: Session, chunks: Chunks, lengths: HeldLengths | None = None
    ) -> None:
        self._session = session
        self._chunks = chunks
        self.lengths = lengths or HeldLengths(keep=False)

    async def search(
        self,
        keys: Sequence[int],
        filters: SearchFilters,
        limit: int,
        groups: Sequence[Group] = (),
    ) -> tuple[list[ScoredChunk], int]:
        """The top ``limit`` chunks by BM25 over the term ``keys`` and the stem ``groups``
        (each one more term, ``stem_terms``) passing ``filters`` (ties by path and line), and
        the number of chunks that hold a term."""
        async with self._session() as db:
            # One statement scores (postings go with their chunks, in one snapshot); the
            # chunks it chooses are rows that never change, so no snapshot is shared with
            # their read (a row deleted in between is left out, as if the search had come a
            # moment later). Only a repository filter, narrowed by a read first, shares one
            # with the scores.
            snapshot = (
                contextlib.nullcontext()
                if filters.repository_id is None
                else db.conn.transaction(readonly=True, isolation="repeatable_read")
            )
            async with snapshot:
                flt = SqlFilter(await narrowed(db, filters), FILTER_PARAMS)
                if groups:  # the groups' terms read with the query's, in the one statement
                    row, lengths = await self._terms(db, read_keys(keys, groups), flt)
                    scored = await decoding(stem_score, row, lengths, keys, groups, limit)
                else:
                    row, lengths = await self._terms(db, keys, flt)
                    scored = await decoding(score, row, lengths, limit)
                if scored is None:
                    return [], 0
                return await self.top(scored, limit, db), scored.count

    async def filter_seqs(
        self, filters: SearchFilters, most: int
    ) -> tuple[int, int, list[int]] | None:
        """The project's epoch and generation and, of that snapshot, the seqs of the chunks
        passing ``filters``, ascending; None when more than ``most`` pass (a narrow filter, a
        file or a small folder, is scored from the postings held in the process when they
        are of that generation: ``postings_cache``)."""
        async with self._session() as db:
            flt = SqlFilter(filters, 1)
            row = await db.conn.fetchrow(
                FILTER_SEQS.at(db.schema, filter=flt.sql, most=most + 1), *flt.params
            )
        if row is None or len(row["seqs"]) > most:
            return None
        return int(row["epoch"]), int(row["generation"]), sorted(row["seqs"])

    async def read(self, keys: Sequence[int]) -> tuple[Mapping[str, Any] | None, Lengths | None]:
        """The ``TERMS`` row of the term ``keys`` (no filters), with the lengths of its
        build."""
        async with self._session() as db:
            return await terms_row(db, keys, HeldLengths(keep=False))

    async def read_terms(
        self, keys: Sequence[int]
    ) -> tuple[int, int, dict[int, Term | None]] | None:
        """``terms.terms_of`` the ``TERMS`` row of the term ``keys``."""
        async with self._session() as db:
            row, lengths = await self._terms(db, keys)
        return await decoding(terms_of, row, keys, lengths)

    async def _terms(
        self, db: ProjectSession, keys: Sequence[int], flt: SqlFilter | None = None
    ) -> tuple[Mapping[str, Any] | None, Lengths | None]:
        return await terms_row(db, keys, self.lengths, flt)

    async def top(
        self, scored: Scored, limit: int, db: ProjectSession | None = None
    ) -> list[ScoredChunk]:
        """The chunks of the top ``limit`` of ``scored`` by normalised score, then path and
        line (what is read, on ``db`` if the caller holds one, else on a session of its
        own)."""
        k = min(int(limit), len(scored.raw))
        if k <= 0:
            return []
        normal = candidates(scored, k)
        seqs = list(normal)
        async with OnDemand(self._session, db) as on:
            if len(seqs) > k + TIE_ROOM:
                # Many ties: their paths and lines first, then the chosen.
                places = await self._chunks.places(on, seqs, scored.epoch)
                # The seq last: a path and line held in two repositories orders alike.
                seqs = sorted(places, key=lambda s: (-normal[s], *places[s], s))[:k]
            chunks = self._chunks.held(seqs, scored.epoch)
            if len(chunks) < len(seqs):
                chunks = await self._chunks.chunks(on, seqs, scored.epoch)
        ordered = sorted(
            chunks, key=lambda s: (-normal[s], chunks[s].file_path, chunks[s].start_line, s)
        )
        return [ScoredChunk(chunks[s], normal[s]) for s in ordered[:k]]


async def decoding(work: Callable[..., T], row: asyncpg.Record | None, *args: Any) -> T:
    """``work(row, *args)``: in a worker thread when the row holds more than
    ``THREAD_POSTINGS`` postings, else here."""
    if row is not None and _postings(row) > THREAD_POSTINGS:
        return await asyncio.to_thread(work, row, *args)
    return work(row, *args)


def _postings(row: asyncpg.Record) -> int:
    """The postings of a row, in its blocks and its packed terms."""
    return int(row["postings"] or 0) + int(row.get("p_postings") or 0)


def candidates(scored: Scored, k: int) -> dict[int, float]:
    """The chunks of ``scored`` that may be among its top ``k`` (1 to its size) by normalised
    score: every one that may round to the k-th's score or above, ties included, by seq, with
    its normalised score."""
    raw, bound = scored.raw, scored.bound
    if isinstance(raw, list):
        kth = heapq.nlargest(k, raw)[-1]
        least = kth - TIE_TOLERANCE * bound
        chosen = [(s, r) for s, r in zip(scored.seqs, raw, strict=True) if r >= least]
    else:
        import numpy as np

        n = len(raw)
        kth = float(np.partition(raw, n - k)[n - k])
        picked = np.flatnonzero(raw >= kth - TIE_TOLERANCE * bound)
        seqs = np.asarray(scored.seqs)[picked]
        chosen = list(zip(seqs.tolist(), raw[picked].tolist(), strict=True))
    return {s: lexical.normalised(float(r), bound) for s, r in chosen}


def score(
    row: asyncpg.Record | None,
    lengths: Lengths | None = None,
    limit: int | None = None,
    *,
    plain: bool | None = None,
) -> Scored | None:
    """The chunks of a ``TERMS`` row with their raw BM25 (as ``lexical.term_score`` sums
    it), or None when no block matched. ``plain``: in plain Python rather than numpy (None:
    as ``blocks.plain_row`` decides). A ``TERMS`` row holding packed terms is read with its
    build's ``lengths``, and only the chunks that may reach its top ``limit`` are scored."""
    if row is not None and has_packed(row):
        return _packed_score(row, lengths, limit)
    if plain if plain is not None else plain_row(row):
        return _plain_score(row)
    found = decoded(row)
    if found is None:
        return None
    seqs, raw = summed(found.chunks, found.contrib)
    return Scored(
        seqs=seqs, raw=raw, bound=lexical.upper_bound(found.idf_of.values()), epoch=found.epoch
    )


def _plain_score(row: asyncpg.Record | None) -> Scored | None:
    """``score`` in plain Python: each chunk's contributions summed in the row's order, as
    ``np.bincount`` sums them."""
    found = plain(row)
    if found is None:
        return None
    sums: dict[int, float] = {}
    for seq, c in zip(found.chunks, found.contrib, strict=True):
        sums[seq] = sums.get(seq, 0.0) + c
    seqs = sorted(sums)
    return Scored(
        seqs=seqs,
        raw=[sums[s] for s in seqs],
        bound=lexical.upper_bound(found.idf_of.values()),
        epoch=found.epoch,
    )


def _packed_score(row: asyncpg.Record, lengths: Lengths | None, limit: int | None) -> Scored | None:
    """``score`` of a row holding packed terms: their postings corrected (``terms.terms_of``),
    summed as ``sums.combined`` sums them."""
    read = terms_of(row, (), lengths)
    if read is None:
        return None
    return ranked_scores(read[2], read[0], limit)


def stem_score(
    row: asyncpg.Record | Mapping[str, Any] | None,
    lengths: Lengths | None,
    keys: Sequence[int],
    groups: Sequence[Group],
    limit: int | None,
) -> Scored | None:
    """``score`` of a ``TERMS`` row read for the query ``keys`` and the terms of ``groups``,
    each group one more term (``stem_terms.grouped``; in plain Python as ``score`` decides)."""
    if row is not None and not has_packed(row) and plain_row(row):
        sums = plain_sums(row, keys, groups)
        if sums is None:
            return None
        return Scored(seqs=sums[0], raw=sums[1], bound=sums[2], epoch=int(row["epoch"]))
    read = terms_of(row, read_keys(keys, groups), lengths)
    if read is None:
        return None
    return ranked_scores(grouped(read[2], keys, groups), read[0], limit)


def ranked_scores(terms: Mapping[int, Term | None], epoch: int, limit: int | None) -> Scored | None:
    """The ``Scored`` of ``terms``: every chunk (no ``limit``), or those that may reach the
    top ``limit`` (``sums.ranked``)."""
    if limit is None:
        whole = combined(terms)
        if whole is None:
            return None
        seqs, raw, bound = whole
        return Scored(seqs=seqs, raw=raw, bound=bound, epoch=epoch)
    found = ranked(terms, limit)
    if found is None:
        return None
    seqs, raw, bound, total = found
    return Scored(seqs=seqs, raw=raw, bound=bound, epoch=epoch, total=total)
