"""Chunks read by seq, kept in the process: what a search reads of its candidates' rows.

A chunk row never changes once written: a write inserts new rows under new seqs (a sequence
never hands one out twice), and the only column ever updated is the vector, which a ``Chunk``
does not hold. So a chunk read once is the chunk of its seq for as long as the project's
schema lives, and a search whose statement found a seq (in the same snapshot as the rows it
scored) can take the chunk from here instead of reading and decoding its row again. The
schema's identity (``epoch``: the OID of its ``corpus_stats`` table, new if the project was
dropped and made again, when seqs start over) comes with each search's statement; another
epoch empties the cache.

A chunk's context lines (``chunk_context``, written and deleted with its row) are read with
it and kept beside it, by the chunk object itself: a hit taken from here needs no read of its
context either.

Bounded by the characters of the chunks' text and context (least recently used out first).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import asyncpg

from adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from adapters.postgres.chunk_store.session import ProjectSession
from codebase_core.models import Chunk


def rows_sql(s: str) -> str:
    """``SELECT_CHUNK``, ``seq`` and the context lines (``before``, ``after``; null where the
    chunk has none kept) of the chunks (alias ``c``) of schema ``s``, to filter."""
    return (
        f"SELECT {SELECT_CHUNK}, c.seq, x.before, x.after FROM {s}.chunks c "
        f"LEFT JOIN {s}.chunk_context x ON x.chunk_id = c.id"
    )


class ChunkCache:
    """A project's chunks by seq, least recently used out first past ``max_chars``."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self._epoch: int | None = None
        self._held: collections.OrderedDict[int, Chunk] = collections.OrderedDict()
        # By the id() of a held chunk object (kept in the value, so the id stays its own).
        self._contexts: dict[int, tuple[Chunk, tuple[str, str]]] = {}

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

    def context(self, chunk: Chunk) -> tuple[str, str] | None:
        """The context lines of ``chunk`` if it is a chunk object held here with them."""
        found = self._contexts.get(id(chunk))
        return found[1] if found is not None and found[0] is chunk else None

    def add(self, seq: int, chunk: Chunk, context: tuple[str, str] | None = None) -> Chunk:
        """Hold ``chunk`` (and its ``context``) as the chunk of ``seq``; the chunk held."""
        held = self._held.get(seq)
        if held is not None:
            return held
        self._held[seq] = chunk
        self._chars += _size(chunk, context)
        if context is not None:
            self._contexts[id(chunk)] = (chunk, context)
        while self._chars > self._max_chars and self._held:
            _, old = self._held.popitem(last=False)
            ctx = self._contexts.pop(id(old), None)
            self._chars -= _size(old, ctx[1] if ctx is not None else None)
        return chunk

    def add_rows(self, rows: Iterable[asyncpg.Record]) -> dict[int, Chunk]:
        """The chunks of ``rows_sql`` rows, now held too."""
        out: dict[int, Chunk] = {}
        for r in rows:
            before = r["before"]
            context = (before, r["after"]) if before is not None else None
            out[r["seq"]] = self.add(r["seq"], chunk_of(r), context)
        return out

    async def chunks(self, db: ProjectSession, seqs: list[int]) -> dict[int, Chunk]:
        """The chunks of ``seqs`` (found in the current snapshot by the caller's statement),
        from here or else read; a seq whose row is gone since is left out."""
        out = self.held(seqs)
        missing = [s for s in seqs if s not in out]
        if missing:
            rows = await db.conn.fetch(f"{rows_sql(db.s)} WHERE c.seq = ANY($1::int8[])", missing)
            out.update(self.add_rows(rows))
        return out


def _size(chunk: Chunk, context: tuple[str, str] | None) -> int:
    return len(chunk.content) + (len(context[0]) + len(context[1]) if context else 0)
