"""Exact vector search of a small project from a copy of its vectors held in this process
(``VectorCopy``, over ``vector_search.VectorSearch``).

Below ``AnnConfig.min_rows`` vectors a project has no ANN index, and every unfiltered search
scanned all its vectors in Postgres: pgvector's cosine costs about a microsecond per row, so
a repository of a few thousand chunks (most repositories) paid milliseconds of database CPU
per search, on every search. One matrix product here costs a small fraction of that.

The copy is of one *generation* of the project (``corpus_stats.generation``, moved on by
every write of chunk rows or vectors) and schema (``chunk_cache``'s epoch). A search with the
copy takes the chosen chunks at hand (``Chunks``), reading the rows of the others in one
statement that also returns the current generation; when it moved on, the copy is dropped
and the search is answered by the database's scan, as it is while there is no copy. While
no write of the project was seen since the copy was read or last found current (its change
token, ``adapters.postgres.changes``, is unchanged) and every chosen chunk is held, the
search needs no statement at all. A copy is read (in the background, on a pooled connection)
once a generation has been searched twice by the database's scan, so a one-shot CLI search
never pays for it, and only while ``n * dimension`` stays within the budget (``max_floats``)
and the copy's bytes (``Copy.nbytes``) fit the process's (``cache_ledger``), which may take
the copy back as it takes back any cache's entries.
A filtered search, or one the copy cannot answer, is the plain search's.

Scores are cosine similarities computed in float32 from unit vectors, as the memory store
computes them (Postgres computes the same cosine with another summation order, so the two
can differ in the seventh digit); ties go to path and line, as in the database's scan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, unbounded
from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import CHUNK_ROWS, Chunks
from codebase_mcp_search.adapters.postgres.chunk_store.filters import NO_FILTERS
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.vector_search import VectorSearch
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.errors import CoreError
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# What leaves a project without a copy (a search without one is still right).
_NOT_READ: tuple[type[BaseException], ...] = (CoreError, *DRIVER_ERRORS, ValueError)
# pgvector's binary form of a vector: dimension (int16), an unused int16, then the values.
_VECTOR_HEADER = 4
# Bytes of a copy beyond its arrays' data (the object and three array headers).
_COPY_OVERHEAD = 512
# Bytes a copy holds per vector beyond its floats: its seq and its rank (int64 each).
_ROW_BYTES = 16


@dataclass(frozen=True, slots=True)
class Copy:
    """The project's vectors at ``generation``: by chunk seq (ascending), as unit rows (a
    zero vector stays zero), with each chunk's rank by path, line and repository for ties."""

    generation: int
    epoch: int  # the schema's (see chunk_cache)
    seqs: np.ndarray[Any, Any]
    unit: np.ndarray[Any, Any]
    ranks: np.ndarray[Any, Any]

    @property
    def dimension(self) -> int:
        return int(self.unit.shape[1])

    @property
    def nbytes(self) -> int:
        return _COPY_OVERHEAD + self.seqs.nbytes + self.unit.nbytes + self.ranks.nbytes

    def top(self, query: np.ndarray[Any, Any], limit: int) -> tuple[list[int], list[float]]:
        """The seqs of the ``limit`` rows most similar to ``query`` (ties by path, line and
        repository), with their cosine similarities."""
        import numpy as np

        norm = float(np.linalg.norm(query))
        # einsum, not BLAS: OpenBLAS's threads spin after each product, several times its
        # CPU, taken from the requests and the database beside it on a server's cores.
        scores = np.einsum("ij,j->i", self.unit, query.astype(np.float32) / np.float32(norm))
        n = len(scores)
        k = min(int(limit), n)
        if k <= 0:
            return [], []
        if k < n:
            kth = np.partition(scores, n - k)[n - k]
            picked = np.flatnonzero(scores >= kth)
        else:
            picked = np.arange(n)
        order = picked[np.lexsort((self.ranks[picked], -scores[picked]))][:k]
        return self.seqs[order].tolist(), scores[order].astype(np.float64).tolist()


# The project's generation, dimension and every vector (seqs, ranks by path, line and
# repository, and values, each concatenated in binary form in seq order), in one snapshot.
READ_COPY = Statement(
    """
    SELECT st.generation, st.tableoid AS epoch, st.n_vectors,
           (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
           v.seqs, v.ranks, v.vectors
    FROM {s}.corpus_stats st, (
        SELECT string_agg(int8send(x.seq), ''::bytea ORDER BY x.seq) AS seqs,
               string_agg(int8send(x.rank), ''::bytea ORDER BY x.seq) AS ranks,
               string_agg(vector_send(x.embedding), ''::bytea ORDER BY x.seq) AS vectors
        FROM (
            SELECT c.seq, c.embedding,
                   rank() OVER (ORDER BY c.file_path, c.start_line, c.repo_id) AS rank
            FROM {s}.chunks c WHERE c.embedding IS NOT NULL
        ) x
    ) v
    """
)


def parse(row: asyncpg.Record) -> Copy | None:
    """The copy a ``READ_COPY`` row holds; None when the project has no vectors, or its
    counts do not agree (a vector of another dimension: the database's scan says why)."""
    import numpy as np

    if row is None or row["vectors"] is None or row["dimension"] is None:
        return None
    dim = int(row["dimension"])
    seqs = np.frombuffer(row["seqs"], dtype=">i8").astype(np.int64)
    n = len(seqs)
    width = _VECTOR_HEADER + 4 * dim
    data = row["vectors"]
    if n != int(row["n_vectors"]) or len(data) != n * width:
        return None
    block = np.frombuffer(data, dtype=np.uint8).reshape(n, width)
    if not np.all(block[:, :2].view(">i2")[:, 0] == dim):
        return None
    values = np.ascontiguousarray(block[:, _VECTOR_HEADER:]).view(">f4").astype(np.float32)
    norms = np.linalg.norm(values, axis=1)
    unit = values / np.where(norms > 0, norms, 1.0)[:, None].astype(np.float32)
    ranks = np.frombuffer(row["ranks"], dtype=">i8").astype(np.int64)
    return Copy(int(row["generation"]), int(row["epoch"]), seqs, np.ascontiguousarray(unit), ranks)


class VectorCopy:
    """``VectorSearch`` with a small project's vectors copied into the process (see the module
    docstring); ``spawn`` runs the copy's read in the background (cancelled when the database
    closes), ``token`` gives the project's change token."""

    def __init__(
        self,
        inner: VectorSearch,
        session: Callable[[], AbstractAsyncContextManager[ProjectSession]],
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]],
        token: Callable[[], Awaitable[Token | None]],
        chunks: Chunks,
        max_floats: int,
        ledger: CacheLedger | None = None,
        project: str = "",
    ) -> None:
        self.inner = inner
        self._session = session
        self._spawn = spawn
        self._token = token
        self._chunks = chunks
        self._max_floats = max_floats
        self._account = (ledger or unbounded()).account(project, "vectors", self._evict, self.clear)
        self.held: Copy | None = None
        # The copy last known current, with the token taken before it was known to be.
        self._trusted: tuple[Copy, Token] | None = None
        self._seen: int | None = None
        self._reading: asyncio.Task[None] | None = None

    async def search(
        self, query: np.ndarray[Any, Any], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        import numpy as np

        if filters == NO_FILTERS and float(np.linalg.norm(query)) > 0:
            copied = await self._from_copy(query, limit)
            if copied is not None:
                return copied
        hits, total, scanned = await self.inner.search_scanned(query, filters, limit)
        if scanned is not None:
            self._searched(scanned.generation, scanned.n_vectors, query.shape[0])
        return hits, total

    async def _from_copy(
        self, query: np.ndarray[Any, Any], limit: int
    ) -> tuple[list[ScoredChunk], int] | None:
        """The top ``limit`` chunks with their cosine similarity, and the number of vectors,
        from the copy (the chunks at hand, or read); None when there is no copy of the
        query's dimension, or the project moved on from the copy's generation (the copy is
        dropped)."""
        held = self.held
        if held is None or held.dimension != query.shape[0]:
            return None
        token = await self._token()
        self._account.touch()
        seqs, scores = held.top(query, limit)
        chunks = self._chunks.held(seqs, held.epoch)
        trusted = token is not None and self._trusted == (held, token)
        if not trusted or len(chunks) < len(seqs):
            # The project's generation, and the rows of the chosen chunks not held: one
            # statement.
            async with self._session() as db:
                rows = await db.conn.fetch(db.sql(CHUNK_ROWS), [s for s in seqs if s not in chunks])
            first = rows[0]
            if (first["generation"], first["epoch"]) != (held.generation, held.epoch):
                if self.held is held:
                    self._hold(None)
                return None
            chunks.update(self._chunks.decoded(rows, held.epoch))
            if token is not None and self.held is held:
                self._trusted = (held, token)
        hits = [ScoredChunk.of(chunks[s], score) for s, score in zip(seqs, scores, strict=True)]
        return hits, len(held.seqs)

    def clear(self) -> None:
        """Forget the copy, and stop a read of one in progress."""
        self._hold(None)
        self._seen = None
        if self._reading is not None:
            self._reading.cancel()
            self._reading = None

    def _searched(self, generation: int, n_vectors: int, dimension: int) -> None:
        """The database's scan answered a search at ``generation``: read a copy in the
        background when this generation was searched before and the copy would fit."""
        if self._seen != generation:
            self._seen = generation
            return
        if n_vectors <= 0 or n_vectors * dimension > self._max_floats:
            return
        if not self._account.fits(_COPY_OVERHEAD + n_vectors * (4 * dimension + _ROW_BYTES)):
            return
        if self._reading is not None and not self._reading.done():
            return
        self._reading = self._spawn(self._read())

    async def _read(self) -> None:
        try:
            token = await self._token()
            async with self._session() as db:
                row = await db.conn.fetchrow(db.sql(READ_COPY))
            # Tens of milliseconds for the largest copy: off the loop serving requests.
            copy = await asyncio.to_thread(parse, row)
            if (
                copy is not None
                and copy.unit.size <= self._max_floats
                and self._account.fits(copy.nbytes)
            ):
                self._hold(copy)
                self._trusted = (copy, token) if token is not None else None
        except _NOT_READ as e:
            log.debug("vector copy not read: %s", e)

    def _hold(self, copy: Copy | None) -> None:
        """Hold ``copy`` (None: none) in place of the copy held, its bytes accounted."""
        was, self.held, self._trusted = self.held, copy, None
        if was is not None:
            self._account.credit(was.nbytes)
        if copy is not None:
            self._account.charge(copy.nbytes)

    def _evict(self) -> bool:
        """Let go of the copy (the ledger takes its bytes back); False when none is held."""
        if self.held is None:
            return False
        self._hold(None)
        return True
