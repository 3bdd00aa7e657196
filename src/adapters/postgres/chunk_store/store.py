"""PgChunkStore: the ChunkStore port over one project schema. Each port method opens a
``ProjectSession`` and delegates the work to the package's modules (rows, filters, vector and
lexical search, segments, the one-model guard); the simple reads and the write transactions
are spelled out here."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import numpy as np

from codebase_mcp_search.adapters.postgres import postings
from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.ann import AnnConfig
from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store import embedding_cache
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import search as bm25_top
from codebase_mcp_search.adapters.postgres.chunk_store.model_guard import ModelGuard
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import PostingsCache
from codebase_mcp_search.adapters.postgres.chunk_store.rows import (
    CHUNK_COLUMNS,
    CONTEXT_COLUMNS,
    FILE_COLUMNS,
    SELECT_CHUNK,
    build_rows,
    chunk_of,
    term_key,
)
from codebase_mcp_search.adapters.postgres.chunk_store.segments import Segments
from codebase_mcp_search.adapters.postgres.chunk_store.session import (
    ALL_REPOSITORIES,
    REPOSITORY_BY_ID,
    REPOSITORY_BY_PATH,
    ProjectSession,
)
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.adapters.postgres.chunk_store.vector_search import VectorSearch
from codebase_mcp_search.adapters.postgres.database import PgDatabase, lock_key
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.adapters.postgres.workspaces import Workspace
from codebase_mcp_search.core.errors import RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.models import (
    CONTEXT_LINES,
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    context_lines,
)
from codebase_mcp_search.core.ports import IndexedFile

# The text of the chunks a store keeps read (chunk_cache), in characters: 16 MB of ASCII.
CHUNK_CACHE_CHARS = 16_000_000
# The postings a store keeps with their BM25 (postings_cache): 16 bytes each, 32 MB.
POSTINGS_CACHED = 2_000_000

SAVE_REPOSITORY = Statement(
    """
    INSERT INTO {s}.repositories
        (id, name, path, embedding_model, embedding_dimension, indexed_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (id) DO UPDATE SET name = $2, path = $3, embedding_model = $4,
        embedding_dimension = $5, indexed_at = $6
    """
)
REPOSITORY_EXISTS = Statement("SELECT 1 FROM {s}.repositories WHERE id = $1")
LOCK_REPOSITORY = Statement("SELECT 1 FROM {s}.repositories WHERE id = $1 FOR UPDATE")
DELETE_REPOSITORY = Statement("DELETE FROM {s}.repositories WHERE id = $1")
FILE_HASHES = Statement("SELECT path, content_hash FROM {s}.files WHERE repo_id = $1")
FILE_HASHES_OF = Statement(
    "SELECT path, content_hash FROM {s}.files WHERE repo_id = $1 AND path = ANY($2::text[])"
)
# Seqs for the chunks of a write ($1 of them), taken before its transaction.
NEW_SEQS = Statement(
    "SELECT nextval(pg_get_serial_sequence('{s}.chunks', 'seq')) FROM generate_series(1, $1)"
)
FILE_TEXTS = Statement(
    "SELECT path, body FROM {s}.files WHERE repo_id = $1 AND path = ANY($2::text[])"
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
CHUNKS_OF_REPOSITORY = Statement(
    """SELECT {chunk} FROM {s}.chunks c WHERE c.repo_id = $1
       ORDER BY c.file_path, c.start_line, c.end_line""",
    chunk=SELECT_CHUNK,
)
# The chunks defining a name of $1 (``symbol_names``, indexed), passing {filter} (from $3).
DEFINITIONS = Statement(
    """SELECT {chunk} FROM {s}.chunks c
       WHERE {s}.symbol_names(c.symbol) && $1::text[] AND {filter}
       ORDER BY c.file_path, c.start_line, c.end_line, c.id LIMIT $2""",
    chunk=SELECT_CHUNK,
)
TRY_LOCK: Final = "SELECT pg_try_advisory_lock($1)"
LOCK: Final = "SELECT pg_advisory_lock($1)"
UNLOCK: Final = "SELECT pg_advisory_unlock($1)"


class PgChunkStore:
    """Postgres + pgvector ChunkStore of one project schema (chunks, vectors, BM25 postings).

    Writes go through ``COPY``; a file's replacement is one transaction. Vectors are searched
    with partial HNSW indexes plus an exact scan of rows not yet indexed (see ``AnnConfig``).
    """

    def __init__(
        self, database: PgDatabase, project_id: str, *, ann: AnnConfig | None = None
    ) -> None:
        self._db = database
        self._project_id = project_id
        ann = ann or AnnConfig()
        self._models = ModelGuard()
        self._chunks = ChunkCache(CHUNK_CACHE_CHARS)
        self._postings = PostingsCache(POSTINGS_CACHED)
        copy = VectorCopy(self._session, self._spawn, ann.copy_floats, self._token)
        self._vectors = VectorSearch(ann, copy, self._chunks)
        self._segments = Segments(database, project_id, ann)
        self._repositories: tuple[Token, tuple[Repository, ...]] | None = None

    @property
    def project_id(self) -> str:
        return self._project_id

    async def workspace(self) -> Workspace:
        """This project's schema (created and migrated on first use)."""
        return await self._db.workspace(self._project_id)

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[ProjectSession]:
        ws = await self.workspace()
        async with self._db.connection() as conn:
            yield ProjectSession.of(conn, ws)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[ProjectSession]:
        """A session for a write transaction of the caller's; what this process keeps read
        of the project is void once it ends (committed or not: a lost connection leaves the
        outcome unknown)."""
        ws = await self.workspace()
        try:
            async with self._session() as db:
                yield db
        finally:
            self._db.changes.bump(ws.schema)

    async def _token(self) -> Token | None:
        """The project's change token now (``adapters.postgres.changes``)."""
        return self._db.changes.token((await self.workspace()).schema)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Background work of this project (cancelled when the database closes)."""
        return self._db.spawn(self._project_id, work)

    def drop_caches(self) -> None:
        """Forget what this process holds of the project (the chunks read, the copy of its
        vectors): memory back, or a benchmark's cold start."""
        self._chunks.clear()
        self._postings.clear()
        self._vectors.drop_copy()
        self._repositories = None

    # --- repositories -------------------------------------------------------------------

    async def save_repository(self, repository: Repository) -> None:
        async with self._writing() as db, db.conn.transaction():
            await self._models.check_repository(db, repository)
            await db.conn.execute(
                db.sql(SAVE_REPOSITORY),
                repository.id,
                repository.name,
                repository.path,
                repository.embedding_model,
                repository.embedding_dimension,
                repository.indexed_at,
            )

    async def get_repository(self, repository_id: str) -> Repository:
        kept = await self._kept_repositories()
        if kept is not None:
            found = [r for r in kept if r.id == repository_id]
        else:
            async with self._session() as db:
                found = await db.repositories(REPOSITORY_BY_ID, repository_id)
        if not found:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        return found[0]

    async def find_repository(self, path: str) -> Repository | None:
        async with self._session() as db:
            found = await db.repositories(REPOSITORY_BY_PATH, path)
        return found[0] if found else None

    async def list_repositories(self) -> list[Repository]:
        kept = await self._kept_repositories()
        if kept is not None:
            return list(kept)
        token = await self._token()
        async with self._session() as db:
            found = await db.repositories(ALL_REPOSITORIES)
        if token is not None:
            self._repositories = (token, tuple(found))
        return found

    async def _kept_repositories(self) -> tuple[Repository, ...] | None:
        """The repositories as last listed, if no write was seen since (every search lists
        them, to check their models)."""
        kept = self._repositories
        if kept is None:
            return None
        token = await self._token()
        return kept[1] if token is not None and token == kept[0] else None

    async def delete_repository(self, repository_id: str) -> None:
        async with self._writing() as db, db.conn.transaction():
            exists = await db.conn.fetchval(db.sql(LOCK_REPOSITORY), repository_id)
            if not exists:
                raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
            n, length, nvec = await db.delete_chunks(repository_id, None)
            await db.conn.execute(db.sql(DELETE_REPOSITORY), repository_id)
            await db.add_stats(-n, -length, -nvec, changed=n > 0)

    # --- files and chunks ---------------------------------------------------------------

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        async with self._session() as db:
            if paths is None:
                rows = await db.conn.fetch(db.sql(FILE_HASHES), repository_id)
            else:
                rows = await db.conn.fetch(db.sql(FILE_HASHES_OF), repository_id, list(paths))
        return {r["path"]: r["content_hash"] for r in rows}

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        for f in files:
            if f.vectors is not None and len(f.vectors) != len(f.chunks):
                raise ValueError(f"{f.file.path}: {len(f.vectors)} vectors for {len(f.chunks)}")
        if not files:
            return
        n_chunks = sum(len(f.chunks) for f in files)
        async with self._writing() as db:
            conn = db.conn
            seqs: list[int] = [r[0] for r in await conn.fetch(db.sql(NEW_SEQS), n_chunks)]
            rows = await asyncio.to_thread(build_rows, repository_id, files, seqs)
            paths = [f.file.path for f in files]
            async with conn.transaction():
                if not await db.lock_files(repository_id, paths):
                    raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
                if rows.dimension is not None:
                    await self._models.check_dimension(db, rows.dimension)
                n_old, len_old, vec_old = await db.delete_chunks(repository_id, paths)
                files_old = await db.delete_files(repository_id, paths)
                await conn.copy_records_to_table(
                    "files", schema_name=db.schema, columns=FILE_COLUMNS, records=rows.files
                )
                await conn.copy_records_to_table(
                    "chunks", schema_name=db.schema, columns=CHUNK_COLUMNS, records=rows.chunks
                )
                await conn.copy_records_to_table(
                    "chunk_context",
                    schema_name=db.schema,
                    columns=CONTEXT_COLUMNS,
                    records=rows.contexts,
                )
                await conn.copy_to_table(
                    "postings",
                    source=io.BytesIO(rows.postings),
                    schema_name=db.schema,
                    columns=list(postings.COLUMNS),
                    format="binary",
                )
                await db.add_counts(repository_id, len(rows.files) - files_old, rows.n_docs - n_old)
                n_vec = rows.n_docs if rows.dimension is not None else 0
                await db.add_stats(
                    rows.n_docs - n_old,
                    rows.total_len - len_old,
                    n_vec - vec_old,
                    changed=rows.n_docs > 0 or n_old > 0,
                )
        self._segments.wrote(rows.n_docs, vectors=rows.dimension is not None)

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        async with self._writing() as db, db.conn.transaction():
            if not await db.lock_files(repository_id, paths):
                return 0
            n, length, nvec = await db.delete_chunks(repository_id, paths)
            deleted = await db.delete_files(repository_id, paths)
            await db.add_counts(repository_id, -deleted, -n)
            await db.add_stats(-n, -length, -nvec, changed=n > 0)
        return deleted

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        async with self._session() as db:
            rows = await db.conn.fetch(db.sql(FILE_TEXTS), repository_id, list(paths))
        return {r["path"]: r["body"] for r in rows}

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        unread: list[Chunk] = []
        for c in chunks:
            # A chunk a search took from the chunk cache has its context there.
            held = self._chunks.context(c)
            if held is not None:
                out[c.id] = held
            else:
                unread.append(c)
        if not unread:
            return out
        async with self._session() as db:
            rows = await db.conn.fetch(db.sql(CONTEXTS), [c.id for c in unread])
            out.update({r["chunk_id"]: (r["before"], r["after"]) for r in rows})
            for c in unread:
                if c.id in out:
                    self._chunks.keep_context(c, out[c.id])
            bare: dict[str, list[Chunk]] = {}
            for c in unread:
                if c.id not in out:
                    bare.setdefault(c.repository_id, []).append(c)
            for repo_id, some in bare.items():
                # Written before contexts were kept, or no longer indexed.
                out.update(await self._contexts_from_bodies(db, repo_id, some))
        return out

    async def _contexts_from_bodies(
        self, db: ProjectSession, repo_id: str, chunks: Sequence[Chunk]
    ) -> dict[str, tuple[str, str]]:
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

    async def chunks(self, repository_id: str) -> list[Chunk]:
        async with self._session() as db:
            if not await db.conn.fetchval(db.sql(REPOSITORY_EXISTS), repository_id):
                raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
            rows = await db.conn.fetch(db.sql(CHUNKS_OF_REPOSITORY), repository_id)
        return [chunk_of(r) for r in rows]

    # --- embedding cache ----------------------------------------------------------------

    async def cached_embeddings(
        self, model: str, content_hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        if not content_hashes:
            return {}
        async with self._session() as db:
            return await embedding_cache.cached(db, model, content_hashes)

    async def cache_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        if not vectors:
            return
        records = embedding_cache.records(model, vectors)
        async with self._session() as db:
            await embedding_cache.add(db, records)

    # --- search -------------------------------------------------------------------------

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        query = np.asarray(vector, dtype=np.float32)
        copied = await self._vectors.copied(query, filters, limit)
        if copied is not None:
            return copied
        async with self._session() as db:
            return await self._vectors.search(db, query, filters, limit)

    async def lexical_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        keys = list(dict.fromkeys(term_key(t) for t in terms))
        if not keys:
            return [], 0
        token = await self._token()
        return await bm25_top(
            self._session, keys, filters, limit, self._chunks, self._postings, token
        )

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        if not names:
            return []
        async with self._session() as db:
            where = SqlFilter(filters, first_param=3)
            rows = await db.conn.fetch(
                db.sql(DEFINITIONS, filter=where.sql),
                list(dict.fromkeys(names)),
                limit,
                *where.params,
            )
        return [chunk_of(r) for r in rows]

    # --- indexing lock and ANN maintenance -----------------------------------------------

    @asynccontextmanager
    async def indexing_lock(self, repository_id: str, *, wait: bool) -> AsyncIterator[None]:
        """Serialise indexing of one repository across processes (session advisory lock)."""
        key = lock_key((await self.workspace()).schema, repository_id)
        async with self._db.connection(session_state=True) as conn:
            got = await conn.fetchval(TRY_LOCK, key)
            if not got:
                if not wait:
                    raise RepositoryBusy(
                        f"repository {repository_id} of project {self._project_id!r} is being "
                        "indexed by another process: retry when it finishes, or wait for it",
                        repository_id=repository_id,
                    )
                await conn.execute(LOCK, key)
            try:
                yield
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute(UNLOCK, key)

    async def optimize(self) -> None:
        """Wait for background ANN builds, then index the tail and merge small segments; after a
        large load, vacuum and analyse chunks and postings."""
        await self._segments.optimize()
