"""Chunks read by seq, kept in the process: what a search reads of its candidates' rows.

A chunk row never changes once written: a write inserts new rows under new seqs (a sequence
never hands one out twice), and the only column ever updated is the vector, which a ``Chunk``
does not hold. So a chunk read once is the chunk of its seq for as long as the project's
schema lives, and a search whose statement found a seq (in the same snapshot as the rows it
scored) can take the chunk from here instead of reading and decoding its row again. The
schema's identity (``epoch``: the OID of its ``corpus_stats`` table, new if the project was
dropped and made again, when seqs start over) comes with each search's statement; another
epoch empties the cache.

Bounded by the characters of the chunks' text (least recently used out first).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import asyncpg

from adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from adapters.postgres.chunk_store.session import ProjectSession
from codebase_core.models import Chunk


class ChunkCache:
    """A project's chunks by seq, least recently used out first past ``max_chars``."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self._epoch: int | None = None
        self._held: collections.OrderedDict[int, Chunk] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def at(self, epoch: int) -> ChunkCache:
        """This cache for the schema ``epoch`` (emptied if it held another's chunks)."""
        if epoch != self._epoch:
            self._held.clear()
            self._chars = 0
            self._epoch = epoch
        return self

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

    def add(self, seq: int, chunk: Chunk) -> None:
        if seq in self._held:
            return
        self._held[seq] = chunk
        self._chars += len(chunk.content)
        while self._chars > self._max_chars and self._held:
            _, old = self._held.popitem(last=False)
            self._chars -= len(old.content)

    def add_rows(self, rows: Iterable[asyncpg.Record]) -> dict[int, Chunk]:
        """The chunks of rows selecting ``SELECT_CHUNK`` and ``seq``, now held too."""
        out: dict[int, Chunk] = {}
        for r in rows:
            chunk = chunk_of(r)
            out[r["seq"]] = chunk
            self.add(r["seq"], chunk)
        return out

    async def chunks(self, db: ProjectSession, seqs: list[int]) -> dict[int, Chunk]:
        """The chunks of ``seqs`` (found in the current snapshot by the caller's statement),
        from here or else read; a seq whose row is gone since is left out."""
        out = self.held(seqs)
        missing = [s for s in seqs if s not in out]
        if missing:
            rows = await db.conn.fetch(
                f"SELECT {SELECT_CHUNK}, c.seq FROM {db.s}.chunks c WHERE c.seq = ANY($1::int8[])",
                missing,
            )
            out.update(self.add_rows(rows))
        return out
