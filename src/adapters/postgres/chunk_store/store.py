"""PgChunkStore: the ChunkStore port over one project schema. Each port method opens a
``ProjectSession`` or delegates to the package's components (repository reads, vector and
lexical search, chunk reads, the one-model guard, segments), each with its cache layered on
top as ``PgCaches`` says; the simple reads and the write transactions are spelled out here."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from codebase_mcp_search.adapters.postgres.ann import AnnConfig
from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store import embedding_cache, vectors
from codebase_mcp_search.adapters.postgres.chunk_store.caches import PgCaches
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import (
    ChunkReader,
    definitions,
    hit_contexts,
)
from codebase_mcp_search.adapters.postgres.chunk_store.filter_matches import FilterMatches
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import LexicalSearch
from codebase_mcp_search.adapters.postgres.chunk_store.locks import repository_lock
from codebase_mcp_search.adapters.postgres.chunk_store.match_cache import KeptMatches
from codebase_mcp_search.adapters.postgres.chunk_store.memos import (
    KeptDimension,
    KeptRepositories,
)
from codebase_mcp_search.adapters.postgres.chunk_store.model_guard import (
    ModelGuard,
    StoredDimension,
)
from codebase_mcp_search.adapters.postgres.chunk_store.packing import PackConfig, Packing
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import HeldPostings
from codebase_mcp_search.adapters.postgres.chunk_store.repositories import RepositoryReader
from codebase_mcp_search.adapters.postgres.chunk_store.rows import (
    CHUNK_COLUMNS,
    CONTEXT_COLUMNS,
    FILE_COLUMNS,
    SELECT_CHUNK,
    build_rows,
    chunk_of,
)
from codebase_mcp_search.adapters.postgres.chunk_store.segments import Segments
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.stem_terms import Stems, search_keys
from codebase_mcp_search.adapters.postgres.chunk_store.terms import HeldLengths
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.adapters.postgres.chunk_store.vector_search import VectorSearch
from codebase_mcp_search.adapters.postgres.database import PgDatabase
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.adapters.postgres.workspaces import Workspace
from codebase_mcp_search.core.errors import RepositoryNotFound
from codebase_mcp_search.core.models import Chunk, Repository, ScoredChunk, SearchFilters
from codebase_mcp_search.core.ports import IndexedFile

SAVE_REPOSITORY = Statement(
    """
    INSERT INTO {s}.repositories
        (id, name, path, embedding_model, embedding_dimension, indexed_at, analyser_version)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET name = $2, path = $3, embedding_model = $4,
        embedding_dimension = $5, indexed_at = $6, analyser_version = $7
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
CHUNKS_OF_REPOSITORY = Statement(
    """SELECT {chunk} FROM {s}.chunks c WHERE c.repo_id = $1
       ORDER BY c.file_path, c.start_line, c.end_line""",
    chunk=SELECT_CHUNK,
)


class PgChunkStore:
    """Postgres + pgvector ChunkStore of one project schema (chunks, vectors, BM25 postings).

    Writes go through ``COPY``; a file's replacement is one transaction. Vectors are searched
    with partial HNSW indexes plus an exact scan of rows not yet indexed (see ``AnnConfig``).
    """

    def __init__(
        self,
        database: PgDatabase,
        project_id: str,
        *,
        ann: AnnConfig | None = None,
        caches: PgCaches | None = None,
        packing: PackConfig | None = None,
    ) -> None:
        self._db = database
        self._project_id = project_id
        ann = ann or AnnConfig()
        self.caches = caches = caches or PgCaches()
        """What this store keeps in the process, by budget."""
        # Each component with its cache on top unless its budget is 0 (bytes to the ledger).
        kept = (database.cache_ledger, project_id)
        reader = ChunkReader()
        chunks = ChunkCache(reader, caches.chunk_chars, *kept) if caches.chunk_chars else reader
        repositories = RepositoryReader(self._session)
        self._repositories = (
            KeptRepositories(repositories, self._token, *kept)
            if caches.repositories
            else repositories
        )
        self._lengths = HeldLengths(*kept, keep=bool(caches.postings))
        lexical = LexicalSearch(self._session, chunks, self._lengths)
        self._lexical = (
            HeldPostings(lexical, self._token, caches.postings, *kept)
            if caches.postings
            else lexical
        )
        count = FilterMatches(ann.exact_rows)
        matches = (
            KeptMatches(count, caches.filter_matches, *kept) if caches.filter_matches else count
        )
        vectors = VectorSearch(self._session, ann, matches)
        copying = (self._session, self._spawn, self._token, chunks, caches.vector_floats, *kept)
        self._vectors = VectorCopy(vectors, *copying) if caches.vector_floats else vectors
        stored = StoredDimension()
        self._models = ModelGuard(KeptDimension(stored) if caches.dimension else stored)
        self._chunks = chunks
        self._segments = Segments(database, project_id, ann)
        self._packing = Packing(database, project_id, packing or PackConfig())

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
        """Forget what this process holds of the project's contents (chunks, terms' postings,
        a packed build's lengths, the copy of its vectors, the repository list): memory back,
        or a benchmark's cold start. The filter matches (keyed by the generation every search
        reads) and the vector dimension stay: they hold a few bytes."""
        for kept in (self._chunks, self._lexical, self._vectors, self._repositories):
            if isinstance(kept, ChunkCache | HeldPostings | VectorCopy | KeptRepositories):
                kept.clear()
        self._lengths.clear()

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
                repository.analyser_version,
            )

    async def get_repository(self, repository_id: str) -> Repository:
        found = await self._repositories.by_id(repository_id)
        if found is None:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        return found

    async def find_repository(self, path: str) -> Repository | None:
        return await self._repositories.by_path(path)

    async def list_repositories(self) -> list[Repository]:
        return await self._repositories.all()

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
        # Writes only (numpy's): a process that only searches does not load them.
        from codebase_mcp_search.adapters.postgres.postings import COLUMNS as POSTINGS_COLUMNS

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
                await db.log_inserts(seqs)
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
                    columns=list(POSTINGS_COLUMNS),
                    format="binary",
                )
                n_vec = rows.n_vectors
                await db.add_counts(
                    repository_id, len(rows.files) - files_old, rows.n_docs - n_old, n_vec - vec_old
                )
                await db.add_stats(
                    rows.n_docs - n_old,
                    rows.total_len - len_old,
                    n_vec - vec_old,
                    changed=rows.n_docs > 0 or n_old > 0,
                )
        self._segments.wrote(rows.n_docs, vectors=rows.n_vectors > 0)

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        async with self._writing() as db, db.conn.transaction():
            if not await db.lock_files(repository_id, paths):
                return 0
            n, length, nvec = await db.delete_chunks(repository_id, paths)
            deleted = await db.delete_files(repository_id, paths)
            await db.add_counts(repository_id, -deleted, -n, -nvec)
            await db.add_stats(-n, -length, -nvec, changed=n > 0)
        return deleted

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        async with self._session() as db:
            rows = await db.conn.fetch(db.sql(FILE_TEXTS), repository_id, list(paths))
        return {r["path"]: r["body"] for r in rows}

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        return await hit_contexts(self._chunks, self._session, chunks)

    async def without_vectors(self, chunk_ids: Sequence[str]) -> set[str]:
        if not chunk_ids:
            return set()
        async with self._session() as db:
            return await vectors.without(db, chunk_ids)

    # --- the semantic layer -------------------------------------------------------------

    async def vector_backlog(self, repository_id: str, limit: int) -> list[Chunk]:
        async with self._session() as db:
            return await vectors.backlog(db, repository_id, limit)

    async def set_vectors(self, repository_id: str, given: Mapping[str, Sequence[float]]) -> int:
        if not given:
            return 0
        async with self._writing() as db, db.conn.transaction():
            if not await db.conn.fetchval(db.sql(LOCK_REPOSITORY), repository_id):
                raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
            stored = await vectors.store(db, self._models, repository_id, given)
        self._segments.wrote(stored, vectors=True)
        return stored

    def vectors_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        return self._lock(repository_id, "vectors", "given its vectors", wait)

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
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        return await self._vectors.search(query, filters, limit)

    async def lexical_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int, stems: Stems = ()
    ) -> tuple[list[ScoredChunk], int]:
        keys, groups = search_keys(terms, stems)
        if not keys and not groups:
            return [], 0
        return await self._lexical.search(keys, filters, limit, groups)

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        if not names:
            return []
        async with self._session() as db:
            return await definitions(db, names, filters, limit)

    # --- indexing lock and ANN maintenance -----------------------------------------------

    def indexing_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        return self._lock(repository_id, None, "indexed", wait)

    @asynccontextmanager
    async def _lock(
        self, repository_id: str, layer: str | None, doing: str, wait: bool
    ) -> AsyncIterator[None]:
        """One layer's lock of a repository (see ``locks.repository_lock``)."""
        schema = (await self.workspace()).schema
        lock = repository_lock(self._db, schema, self._project_id, repository_id, layer, doing)
        async with lock(wait):
            yield

    async def optimize(self) -> None:
        """ANN builds waited for, the tail indexed, small segments merged; after a large load
        chunks and postings vacuumed; then a large project's common terms packed if due."""
        await self._segments.optimize()
        await self._packing.optimize()
