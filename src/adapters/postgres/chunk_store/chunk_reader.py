"""Chunks read back for a search: its chosen chunks' rows by seq, the places (path and line)
of candidates tied at its limit, and its hits' context lines. ``ChunkReader`` reads every
one asked for; ``chunk_cache.ChunkCache`` keeps what it reads, behind the same interface
(``Chunks``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import asyncpg

from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from codebase_mcp_search.adapters.postgres.chunk_store.session import OnDemand, ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.models import CONTEXT_LINES, Chunk, SearchFilters, context_lines

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
PLACES = Statement(
    "SELECT c.seq, c.file_path, c.start_line FROM {s}.chunks c WHERE c.seq = ANY($1::int8[])"
)
CONTEXTS = Statement(
    "SELECT chunk_id, before, after FROM {s}.chunk_context WHERE chunk_id = ANY($1::text[])"
)
# The file bodies of the chunks $3 of repository $1 in files $2 (still indexed).
BODIES = Statement(
    """SELECT c.id, f.body FROM {s}.chunks c
       JOIN {s}.files f ON f.repo_id = c.repo_id AND f.path = c.file_path
       WHERE c.repo_id = $1 AND c.file_path = ANY($2::text[]) AND c.id = ANY($3::text[])"""
)

Place = tuple[str, int]
Context = tuple[str, str]


class Chunks(Protocol):
    """Chunks by seq for a search (the schema's ``epoch``: see ``chunk_cache``), reading on
    ``on`` (a session opened when first needed) what is not at hand."""

    def held(self, seqs: Iterable[int], epoch: int) -> dict[int, Chunk]:
        """The chunks of ``seqs`` at hand without a statement."""
        ...

    def decoded(self, rows: Iterable[asyncpg.Record], epoch: int) -> dict[int, Chunk]:
        """The chunks of ``CHUNK_ROWS`` rows the caller read in the schema ``epoch`` (those
        found)."""
        ...

    async def chunks(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Chunk]:
        """The chunks of ``seqs``, which the caller's statement found in the schema
        ``epoch``; a seq whose row is gone since is left out, and none is read if the schema
        is another by now (the project dropped and made again)."""
        ...

    async def places(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Place]:
        """The path and first line of each chunk of ``seqs`` still indexed."""
        ...

    async def contexts(self, on: OnDemand, chunks: Sequence[Chunk]) -> dict[str, Context]:
        """The context lines written with ``chunks`` (``chunk_context``), by chunk id."""
        ...


class ChunkReader:
    """Reads the chunks, places and contexts asked for; holds none."""

    def held(self, seqs: Iterable[int], epoch: int) -> dict[int, Chunk]:
        return {}

    def decoded(self, rows: Iterable[asyncpg.Record], epoch: int) -> dict[int, Chunk]:
        return {r["seq"]: chunk_of(r) for r in rows if r["seq"] is not None}

    async def chunks(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Chunk]:
        db = await on()
        rows = await db.conn.fetch(db.sql(CHUNK_ROWS), list(seqs))
        return self.decoded(rows, epoch) if rows[0]["epoch"] == epoch else {}

    async def places(self, on: OnDemand, seqs: Sequence[int], epoch: int) -> dict[int, Place]:
        db = await on()
        rows = await db.conn.fetch(db.sql(PLACES), list(seqs))
        return {r["seq"]: (r["file_path"], r["start_line"]) for r in rows}

    async def contexts(self, on: OnDemand, chunks: Sequence[Chunk]) -> dict[str, Context]:
        db = await on()
        rows = await db.conn.fetch(db.sql(CONTEXTS), [c.id for c in chunks])
        return {r["chunk_id"]: (r["before"], r["after"]) for r in rows}


async def hit_contexts(
    reader: Chunks,
    session: Callable[[], AbstractAsyncContextManager[ProjectSession]],
    chunks: Sequence[Chunk],
) -> dict[str, Context]:
    """The context lines of ``chunks`` (hits of a search), by chunk id: those written with
    them, else cut from their files' bodies; none for a chunk no longer indexed."""
    if not chunks:
        return {}
    async with OnDemand(session) as on:
        out = await reader.contexts(on, chunks)
        bare: dict[str, list[Chunk]] = {}
        for c in chunks:
            if c.id not in out:
                bare.setdefault(c.repository_id, []).append(c)
        for repo_id, some in bare.items():
            # Written before contexts were kept, or no longer indexed.
            out.update(await _contexts_from_bodies(await on(), repo_id, some))
    return out


async def _contexts_from_bodies(
    db: ProjectSession, repo_id: str, chunks: Sequence[Chunk]
) -> dict[str, Context]:
    """The context of those of ``chunks`` still indexed, cut from their files' bodies."""
    rows = await db.conn.fetch(
        db.sql(BODIES),
        repo_id,
        sorted({c.file_path for c in chunks}),
        [c.id for c in chunks],
    )
    bodies = {r["id"]: r["body"] for r in rows}
    return {
        c.id: context_lines(bodies[c.id], c.content, c.start_line, c.end_line, CONTEXT_LINES)
        for c in chunks
        if c.id in bodies
    }


# The chunks defining a name of $1 (``symbol_names``, indexed), passing {filter} (from $3).
DEFINITIONS = Statement(
    """SELECT {chunk} FROM {s}.chunks c
       WHERE {s}.symbol_names(c.symbol) && $1::text[] AND {filter}
       ORDER BY c.file_path, c.start_line, c.end_line, c.id LIMIT $2""",
    chunk=SELECT_CHUNK,
)


async def definitions(
    db: ProjectSession, names: Sequence[str], filters: SearchFilters, limit: int
) -> list[Chunk]:
    """Chunks passing ``filters`` whose symbol holds one of ``names`` (an indexed lookup)."""
    where = SqlFilter(filters, first_param=3)
    rows = await db.conn.fetch(
        db.sql(DEFINITIONS, filter=where.sql), list(dict.fromkeys(names)), limit, *where.params
    )
    return [chunk_of(r) for r in rows]
