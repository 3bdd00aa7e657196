"""ProjectSession: one project's schema on one pooled connection, and the statements that
several of the store's operations share (the deletion of chunks with their postings, the
per-repository counts and the project's document statistics, file locks); ``OnDemand``, a
session opened only when a read needs one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import asyncpg

from codebase_mcp_search.adapters.postgres.database import lock_key
from codebase_mcp_search.adapters.postgres.sql import Slot, Sql, Statement
from codebase_mcp_search.adapters.postgres.workspaces import Workspace

LOCK_REPOSITORY = Statement("SELECT 1 FROM {s}.repositories WHERE id = $1 FOR KEY SHARE")
LOCK_FILES = "SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::int8[]) AS k"
_OF_FILES = "repo_id = $1 AND file_path = ANY($2::text[])"
ANY_CHUNK_OF_FILES = Statement(
    "SELECT EXISTS (SELECT 1 FROM {s}.chunks WHERE {where})", where=_OF_FILES
)
_DELETE_CHUNKS = """
    WITH old AS (
        DELETE FROM {s}.chunks WHERE {where}
        RETURNING seq, id, repo_id, file_path, language, doc_len, terms, content_hash,
                  embedding
    ), context AS (
        DELETE FROM {s}.chunk_context x USING old o WHERE x.chunk_id = o.id
    ), gone AS (
        -- A block of a term starts at the first chunk holding it of its file and
        -- language (see rows.build_rows).
        DELETE FROM {s}.postings p
        USING (
            SELECT t.term, min(o.seq) AS first
            FROM old o CROSS JOIN LATERAL unnest(o.terms) AS t(term)
            GROUP BY o.repo_id, o.file_path, o.language, t.term
        ) d
        WHERE p.term = d.term AND p.first = d.first
    ), logged AS (
        -- For the packed postings built before this write (see chunk_store.packing).
        INSERT INTO {s}.packed_gone (seq) SELECT seq FROM old
    ), retired AS (
        -- Keep the vectors of replaced chunks: an edit undone costs no embedding.
        INSERT INTO {s}.embedding_cache (model, content_hash, embedding)
        SELECT r.embedding_model, o.content_hash, o.embedding
        FROM old o JOIN {s}.repositories r ON r.id = o.repo_id
        WHERE o.embedding IS NOT NULL AND r.embedding_model IS NOT NULL
        -- One key order for every writer: concurrent writers cannot deadlock here.
        ORDER BY 1, 2
        ON CONFLICT DO NOTHING
    )
    SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len,
           count(*) FILTER (WHERE embedding IS NOT NULL) AS nvec
    FROM old
"""
DELETE_CHUNKS_OF_REPOSITORY = Statement(_DELETE_CHUNKS, where="repo_id = $1")
DELETE_CHUNKS_OF_FILES = Statement(_DELETE_CHUNKS, where=_OF_FILES)
DELETE_FILES = Statement("DELETE FROM {s}.files WHERE repo_id = $1 AND path = ANY($2::text[])")
ADD_COUNTS = Statement(
    """UPDATE {s}.repositories SET file_count = file_count + $2,
           chunk_count = chunk_count + $3, vector_count = vector_count + $4
       WHERE id = $1"""
)
# Every write moves the generation on, and counts itself among the writes that log what
# they insert and delete (``logged``: see chunk_store.packing).
ADD_STATS = Statement(
    """UPDATE {s}.corpus_stats SET n_docs = n_docs + $1, total_len = total_len + $2,
           n_vectors = n_vectors + $3, generation = generation + 1, logged = logged + 1"""
)
RECOUNT_VECTORS = Statement(
    """UPDATE {s}.corpus_stats SET
           n_vectors = (SELECT count(*) FROM {s}.chunks WHERE embedding IS NOT NULL),
           generation = generation + 1, logged = logged + 1"""
)
# The seqs of a write's new chunks ($1 to $2, $3 of them), for the packed postings.
LOG_INSERTS = Statement("INSERT INTO {s}.packed_inserts (lo, hi, n) VALUES ($1, $2, $3)")
RECOUNT_REPOSITORY_VECTORS = Statement(
    """UPDATE {s}.repositories r SET vector_count = (
           SELECT count(*) FROM {s}.chunks c WHERE c.repo_id = r.id AND c.embedding IS NOT NULL)"""
)


@dataclass(frozen=True, slots=True)
class ProjectSession:
    """A connection bound to a project's schema: ``schema`` is its name (for ``sql``,
    catalog lookups and COPY), ``s`` its quoted form (the key of its advisory locks)."""

    conn: asyncpg.Connection
    schema: str
    s: str

    @classmethod
    def of(cls, conn: asyncpg.Connection, workspace: Workspace) -> ProjectSession:
        return cls(conn, workspace.schema, workspace.quoted)

    def sql(self, statement: Statement, **slots: Slot) -> str:
        """``statement``'s text on this project's schema."""
        return statement.at(self.schema, **slots)

    def piece(self, statement: Statement, **slots: Slot) -> Sql:
        """``statement``'s text on this project's schema, for another's slot."""
        return statement.piece(self.schema, **slots)

    async def lock_files(self, repo_id: str, paths: Sequence[str]) -> bool:
        """Lock the repository against deletion and ``paths`` against other writers, until
        the transaction ends; False if there is no such repository. Writers of the same files
        queue here (the locks are taken in one order: no deadlock); writers of other files of
        the repository run side by side up to the update of its counts, which every write
        does last."""
        exists = await self.conn.fetchval(self.sql(LOCK_REPOSITORY), repo_id)
        if not exists:
            return False
        # Keyed by the quoted schema name: every process must compute the same keys.
        await self.conn.execute(LOCK_FILES, sorted({lock_key(self.s, repo_id, p) for p in paths}))
        return True

    async def delete_chunks(
        self, repo_id: str, paths: Sequence[str] | None
    ) -> tuple[int, int, int]:
        """Delete chunks (of ``paths``, or all of the repository) and their postings; returns
        the (chunks, summed document length, vectors) removed, for ``add_stats``."""
        if paths is None:
            row = await self.conn.fetchrow(self.sql(DELETE_CHUNKS_OF_REPOSITORY), repo_id)
        else:
            # New files (every file of a first index) have nothing to delete: one index probe
            # instead of planning and running the statement below.
            args = (repo_id, list(paths))
            if not await self.conn.fetchval(self.sql(ANY_CHUNK_OF_FILES), *args):
                return 0, 0, 0
            row = await self.conn.fetchrow(self.sql(DELETE_CHUNKS_OF_FILES), *args)
        return int(row["n"]), int(row["len"]), int(row["nvec"])

    async def delete_files(self, repo_id: str, paths: Sequence[str]) -> int:
        """Delete the file rows of ``paths``; how many there were."""
        result: str = await self.conn.execute(self.sql(DELETE_FILES), repo_id, list(paths))
        return int(result.rsplit(" ", 1)[-1])

    async def log_inserts(self, seqs: Sequence[int]) -> None:
        """Log the seqs of chunks this transaction inserts (see chunk_store.packing)."""
        if seqs:
            await self.conn.execute(self.sql(LOG_INSERTS), min(seqs), max(seqs), len(seqs))

    async def add_counts(self, repo_id: str, files: int, chunks: int, vectors: int) -> None:
        """Add to a repository's file, chunk and vector counts."""
        if files or chunks or vectors:
            await self.conn.execute(self.sql(ADD_COUNTS), repo_id, files, chunks, vectors)

    async def add_stats(
        self, n_docs: int, total_len: int, n_vectors: int, *, changed: bool
    ) -> None:
        """Add to the project's document statistics; ``changed``: chunk rows were deleted or
        inserted (the generation moves on, even when the counts come out the same)."""
        # Last in its transaction: the one row every writer updates is locked only briefly.
        if changed or n_docs or total_len or n_vectors:
            await self.conn.execute(self.sql(ADD_STATS), n_docs, total_len, n_vectors)

    async def recount_vectors(self) -> None:
        """Count the project's vectors afresh, and each repository's (after vectors were
        cleared in bulk)."""
        await self.conn.execute(self.sql(RECOUNT_VECTORS))
        await self.conn.execute(self.sql(RECOUNT_REPOSITORY_VECTORS))


class OnDemand:
    """A project session opened on first need (``await on()``) and closed with the block, or
    the one the caller holds: for reads that the process may answer without one."""

    def __init__(
        self,
        session: Callable[[], AbstractAsyncContextManager[ProjectSession]],
        held: ProjectSession | None = None,
    ) -> None:
        self._session = session
        self._db = held
        self._stack = contextlib.AsyncExitStack()

    async def __call__(self) -> ProjectSession:
        if self._db is None:
            self._db = await self._stack.enter_async_context(self._session())
        return self._db

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(kind, error, trace)
