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

Bounded by the characters of the chunks' text and contexts (least recently used out first),
and by the process's budget (``cache_ledger``), charged ``chunk_bytes`` a chunk and
``context_bytes`` a context.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterable, Sequence
from typing import Final

import asyncpg

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, unbounded
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import (
    ChunkReader,
    Context,
    Place,
)
from codebase_mcp_search.adapters.postgres.chunk_store.session import OnDemand
from codebase_mcp_search.core.models import Chunk

# Bytes a held chunk costs beyond its strings: the model object with its field dict and
# fields-set, its ints, and its slots in the two dicts here (1,570 measured with tracemalloc
# on Python 3.11 and pydantic 2).
CHUNK_OVERHEAD: Final = 1_600
# A context's tuple and dict slot.
CONTEXT_OVERHEAD: Final = 160


def chunk_bytes(chunk: Chunk) -> int:
    """What holding ``chunk`` costs: its strings as Python stores them, and the overhead."""
    strings = (chunk.id, chunk.repository_id, chunk.file_path, chunk.content, chunk.content_hash)
    optional = (chunk.language, chunk.symbol, chunk.kind)
    return (
        CHUNK_OVERHEAD
        + sum(sys.getsizeof(s) for s in strings)
        + sum(sys.getsizeof(s) for s in optional if s is not None)
    )


def context_bytes(context: Context) -> int:
    return CONTEXT_OVERHEAD + sys.getsizeof(context[0]) + sys.getsizeof(context[1])


class ChunkCache:
    """``ChunkReader`` with a project's chunks kept by seq, least recently used out first past
    ``max_chars`` or when ``ledger`` takes bytes back (as ``project``'s ``chunks``)."""

    def __init__(
        self,
        inner: ChunkReader,
        max_chars: int,
        ledger: CacheLedger | None = None,
        project: str = "",
    ) -> None:
        self._inner = inner
        self._max_chars = max_chars
        self._chars = 0
        self._account = (ledger or unbounded()).account(
            project, "chunks", self._evict_oldest, self.clear
        )
        self._epoch: int | None = None
        self._held: collections.OrderedDict[int, Chunk] = collections.OrderedDict()
        # The seq of each held chunk object, by its id(): a context is kept for the very
        # object a search was given, not for an equal chunk read elsewhere.
        self._seq_of: dict[int, int] = {}
        self._contexts: dict[int, Context] = {}

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        self._held.clear()
        self._seq_of.clear()
        self._contexts.clear()
        self._chars = 0
        self._account.credit(self._account.bytes)

    def held(self, seqs: Iterable[int], epoch: int) -> dict[int, Chunk]:
        self._at(epoch)
        held = self._held
        out: dict[int, Chunk] = {}
        for seq in seqs:
            chunk = held.get(seq)
            if chunk is not None:
                held.move_to_end(seq)
                out[seq] = chunk
        if out:
            self._account.touch()
        return out

    def decoded(self, rows: Iterable[asyncpg.Record], epoch: int) -> dict[int, Chunk]:
        """The chunks of the rows, now held too unless the cache moved on to another epoch
        meanwhile."""
        return self._kept(self._inner.decoded(rows, epoch), epoch)

    async def chunks(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Chunk]:
        out = self.held(seqs, epoch)
        missing = [s for s in seqs if s not in out]
        if missing:
            out.update(self._kept(await self._inner.chunks(on, missing, epoch), epoch))
        return out

    async def places(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Place]:
        held = self.held(seqs, epoch)
        out = {s: (c.file_path, c.start_line) for s, c in held.items()}
        missing = [s for s in seqs if s not in held]
        if missing:
            out.update(await self._inner.places(on, missing, epoch))
        return out

    async def contexts(self, on: OnDemand, chunks: Sequence[Chunk]) -> dict[str, Context]:
        out: dict[str, Context] = {}
        unread: list[Chunk] = []
        for c in chunks:
            # A chunk a search took from here has its context here once read.
            held = self.context(c)
            if held is not None:
                out[c.id] = held
            else:
                unread.append(c)
        if unread:
            read = await self._inner.contexts(on, unread)
            for c in unread:
                if c.id in read:
                    self.keep_context(c, read[c.id])
            out.update(read)
        return out

    def context(self, chunk: Chunk) -> Context | None:
        """The context lines kept for ``chunk``, if it is a chunk object held here."""
        seq = self._seq(chunk)
        return self._contexts.get(seq) if seq is not None else None

    def keep_context(self, chunk: Chunk, context: Context) -> None:
        """Keep ``chunk``'s context lines, if it is a chunk object held here."""
        seq = self._seq(chunk)
        if seq is not None and seq not in self._contexts:
            nbytes = context_bytes(context)
            if not self._account.fits(nbytes):
                return
            self._contexts[seq] = context
            self._chars += len(context[0]) + len(context[1])
            self._account.charge(nbytes)
            self._shrink()

    def add(self, seq: int, chunk: Chunk) -> Chunk:
        """Hold ``chunk`` as the chunk of ``seq``; the chunk held (the first one given)."""
        held = self._held.get(seq)
        if held is not None:
            return held
        nbytes = chunk_bytes(chunk)
        if not self._account.fits(nbytes):
            return chunk
        self._held[seq] = chunk
        self._seq_of[id(chunk)] = seq
        self._chars += len(chunk.content)
        self._account.charge(nbytes)
        self._shrink()
        return chunk

    def _at(self, epoch: int) -> None:
        """Hold chunks of the schema ``epoch`` (emptied if it held another's)."""
        if epoch != self._epoch:
            self.clear()
            self._epoch = epoch

    def _kept(self, chunks: dict[int, Chunk], epoch: int) -> dict[int, Chunk]:
        """``chunks`` read from the schema ``epoch``, held (the chunk held first for a seq
        stands for it) unless the cache moved on to another epoch."""
        if epoch != self._epoch:
            return chunks
        return {seq: self.add(seq, chunk) for seq, chunk in chunks.items()}

    def _seq(self, chunk: Chunk) -> int | None:
        seq = self._seq_of.get(id(chunk))
        return seq if seq is not None and self._held.get(seq) is chunk else None

    def _shrink(self) -> None:
        while self._chars > self._max_chars and self._evict_oldest():
            pass

    def _evict_oldest(self) -> bool:
        """Let go of the least recently used chunk and its context; False when none is held."""
        if not self._held:
            return False
        seq, old = self._held.popitem(last=False)
        del self._seq_of[id(old)]
        self._chars -= len(old.content)
        nbytes = chunk_bytes(old)
        context = self._contexts.pop(seq, None)
        if context is not None:
            self._chars -= len(context[0]) + len(context[1])
            nbytes += context_bytes(context)
        self._account.credit(nbytes)
        return True
