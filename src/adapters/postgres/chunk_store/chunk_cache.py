"""Chunks read by seq, kept in the process: what a search reads of its candidates' rows.

A chunk row never changes once written: a write inserts new rows under new seqs (a sequence
never hands one out twice), and the only column ever updated is the vector, which a ``Chunk``
does not hold. So a chunk read once is the chunk of its seq for as long as the project's
schema lives, and a search whose statement found a seq (in the same snapshot as the rows it
scored) can take the chunk from here instead of reading and decoding its row again. The
schema's identity (``epoch``: the OID of its ``corpus_stats`` table, new if the project was
dropped and made again, when seqs start over) comes with each search's statement; another
epoch empties the cache.

A hit's context lines (``chunk_context``, written and deleted with its row) are kept beside
its chunk once read for it, by the chunk object: a later hit on the same chunk reads none.
Only the hits' contexts are read, not every candidate's.

Bounded by the characters of the chunks' text and contexts (least recently used out first).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import asyncpg

from codebase_mcp_search.adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.models import Chunk

# The rows (``SELECT_CHUNK`` and ``seq``) of the chunks whose seqs are $1, each with the
# project's ``generation`` and ``epoch``; one row of those two alone (chunk columns null) when
# none is found. The state comes in the rows' own snapshot.
CHUNK_ROWS = Statement(
    """
    SELECT c.*, st.generation, st.tableoid AS epoch
    FROM {s}.corpus_stats st
    LEFT JOIN LATERAL (
        SELECT {chunk}, c.seq FROM {s}.chunks c WHERE c.seq = ANY($1::int8[])
    ) c ON true
    """,
    chunk=SELECT_CHUNK,
)


class ChunkCache:
    """A project's chunks by seq, least recently used out first past ``max_chars``."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self._epoch: int | None = None
        self._held: collections.OrderedDict[int, Chunk] = collections.OrderedDict()
        # The seq of each held chunk object, by its id(): a context is kept for the very
        # object a search was given, not for an equal chunk read elsewhere.
        self._seq_of: dict[int, int] = {}
        self._contexts: dict[int, tuple[str, str]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def at(self, epoch: int) -> ChunkCache:
        """This cache for the schema ``epoch`` (emptied if it held another's chunks)."""
        if epoch != self._epoch:
            self.clear()
            self._epoch = epoch
        return self

    def clear(self) -> None:
        self._held.clear()
        self._seq_of.clear()
        self._contexts.clear()
        self._chars = 0

    def held(self, seqs: Iterable[int]) -> dict[int, Chunk]:
        """The chunks of ``seqs`` held here."""
        held = self._held
        out: dict[int, Chunk] = {}
        for seq in seqs:
            chunk = held.get(seq)
            if chunk is not None:
                held.move_to_end(seq)
                out[seq] = chunk
        return out

    def _seq(self, chunk: Chunk) -> int | None:
        seq = self._seq_of.get(id(chunk))
        return seq if seq is not None and self._held.get(seq) is chunk else None

    def context(self, chunk: Chunk) -> tuple[str, str] | None:
        """The context lines kept for ``chunk``, if it is a chunk object held here."""
        seq = self._seq(chunk)
        return self._contexts.get(seq) if seq is not None else None

    def keep_context(self, chunk: Chunk, context: tuple[str, str]) -> None:
        """Keep ``chunk``'s context lines, if it is a chunk object held here."""
        seq = self._seq(chunk)
        if seq is not None and seq not in self._contexts:
            self._contexts[seq] = context
            self._chars += len(context[0]) + len(context[1])
            self._shrink()

    def add(self, seq: int, chunk: Chunk) -> Chunk:
        """Hold ``chunk`` as the chunk of ``seq``; the chunk held (the first one given)."""
        held = self._held.get(seq)
        if held is not None:
            return held
        self._held[seq] = chunk
        self._seq_of[id(chunk)] = seq
        self._chars += len(chunk.content)
        self._shrink()
        return chunk

    def _shrink(self) -> None:
        while self._chars > self._max_chars and self._held:
            seq, old = self._held.popitem(last=False)
            del self._seq_of[id(old)]
            self._chars -= len(old.content)
            context = self._contexts.pop(seq, None)
            if context is not None:
                self._chars -= len(context[0]) + len(context[1])

    def add_rows(self, rows: Iterable[asyncpg.Record], epoch: int) -> dict[int, Chunk]:
        """The chunks of ``CHUNK_ROWS`` rows (those found) read from the schema ``epoch``, now held too
        unless the cache moved on to another epoch meanwhile."""
        found = [r for r in rows if r["seq"] is not None]
        if epoch != self._epoch:
            return {r["seq"]: chunk_of(r) for r in found}
        return {r["seq"]: self.add(r["seq"], chunk_of(r)) for r in found}

    async def chunks(self, db: ProjectSession, seqs: list[int], epoch: int) -> dict[int, Chunk]:
        """The chunks of ``seqs``, found by the caller's statement in the schema ``epoch``,
        from here or else read; a seq whose row is gone since is left out, and none is read
        if the schema is another by now (the project dropped and made again)."""
        out = self.held(seqs)
        missing = [s for s in seqs if s not in out]
        if missing:
            rows = await db.conn.fetch(db.sql(CHUNK_ROWS), missing)
            if rows[0]["epoch"] == epoch:
                out.update(self.add_rows(rows, epoch))
        return out
