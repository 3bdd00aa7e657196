"""PgChunkStore: one project's repositories, chunks, vectors (pgvector) and BM25 postings."""

from __future__ import annotations

import array
import asyncio
import collections
import contextlib
import functools
import hashlib
import io
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np

from adapters.postgres import postings
from adapters.postgres._errors import DRIVER_ERRORS
from adapters.postgres.ann import AnnConfig
from adapters.postgres.database import PgDatabase, Workspace, lock_key
from adapters.postgres.schema import quote_ident
from codebase_core import lexical
from codebase_core.errors import ModelMismatch, RepositoryBusy, RepositoryNotFound
from codebase_core.models import (
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    file_extension,
)
from codebase_core.ports import IndexedFile

_CHUNK_COLUMNS = (
    "seq",
    "id",
    "repo_id",
    "file_path",
    "file_ext",
    "language",
    "symbol",
    "kind",
    "start_line",
    "end_line",
    "content",
    "content_hash",
    "token_count",
    "doc_len",
    "terms",
    "embedding",
)
_SELECT_CHUNK = (
    "c.id, c.repo_id, c.file_path, c.language, c.symbol, c.kind, c.start_line, c.end_line, "
    "c.content, c.content_hash, c.token_count"
)


@functools.lru_cache(maxsize=262_144)
def term_key(term: str) -> int:
    """The signed 64-bit key of an analysed term in the postings table (collisions ~2^-64)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _chunk(row: asyncpg.Record) -> Chunk:
    return Chunk(
        id=row["id"],
        repository_id=row["repo_id"],
        file_path=row["file_path"],
        language=row["language"],
        symbol=row["symbol"],
        kind=row["kind"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        content=row["content"],
        content_hash=row["content_hash"],
        token_count=row["token_count"],
    )


@dataclass(slots=True)
class _Rows:
    files: list[tuple[Any, ...]]
    chunks: list[tuple[Any, ...]]
    postings: bytes  # binary COPY data of postings blocks (see adapters.postgres.postings)
    n_docs: int
    total_len: int
    dimension: int | None


@dataclass(frozen=True, slots=True)
class _Matches:
    """Chunks passing a search filter, per ANN bucket: counts, and seqs of the small ones."""

    counts: dict[int, int]
    seqs: dict[int, array.array[int]]  # 8 bytes a match: at most 8,000 per bucket


# Filters whose matches a store remembers (see PgChunkStore._matches).
_MATCHES_CACHED = 32

# Extra rows a lexical top-N fetches past its limit, to see whether ties cross the limit.
_TIE_ROOM = 32
# Scores closer than this (relative to the query's BM25 bound) may round to the same normalised
# score (``lexical.normalised`` keeps 9 decimals): they are ties, broken by path and line.
_TIE_TOLERANCE = 2e-9


class _Filter:
    """SQL conditions (on alias ``c``) for ``SearchFilters``, with bound parameters."""

    def __init__(self, filters: SearchFilters, first_param: int) -> None:
        self.params: list[Any] = []
        conds: list[str] = []

        def bind(value: Any) -> str:
            self.params.append(value)
            return f"${first_param + len(self.params) - 1}"

        if filters.repository_id is not None:
            conds.append(f"c.repo_id = {bind(filters.repository_id)}")
        if filters.language is not None:
            conds.append(f"c.language = {bind(filters.language)}")
        if filters.file_type is not None:
            conds.append(f"c.file_ext = {bind(filters.file_type)}")
        d = filters.directory  # normalised by SearchFilters
        if d:
            # A literal prefix as a byte range (file_path is COLLATE "C"; '0' follows '/'),
            # so no LIKE escaping. The outer range is one index range scan; the inner test
            # keeps 'd' and 'd/...' and drops its neighbours 'd.py', 'd-x', ... (an OR of
            # the two alone cannot bound the scan: it read the whole path index).
            p1, p2, p3 = bind(d), bind(d + "/"), bind(d + "0")
            conds.append(
                f"c.file_path >= {p1} AND c.file_path < {p3} "
                f"AND (c.file_path = {p1} OR c.file_path >= {p2})"
            )
        self.sql = " AND ".join(conds) if conds else "true"
        self.empty = not conds


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
        self._ann = ann or AnnConfig()
        self._builds: set[asyncio.Task[None]] = set()
        self._dimension: int | None = None
        self._written = 0
        self._since_analyze = 0
        self._matches_cache: collections.OrderedDict[tuple[Any, ...], _Matches] = (
            collections.OrderedDict()
        )

    @property
    def project_id(self) -> str:
        return self._project_id

    async def workspace(self) -> Workspace:
        """This project's schema (created and migrated on first use)."""
        return await self._db.workspace(self._project_id)

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[tuple[asyncpg.Connection, str]]:
        ws = await self.workspace()
        async with self._db.connection() as conn:
            yield conn, ws.quoted

    # --- repositories -------------------------------------------------------------------

    async def _repos(
        self, conn: asyncpg.Connection, s: str, where: str, *args: Any
    ) -> list[Repository]:
        rows = await conn.fetch(
            f"""
            SELECT r.* FROM {s}.repositories r WHERE {where} ORDER BY r.name, r.id
            """,
            *args,
        )
        return [
            Repository(
                id=r["id"],
                name=r["name"],
                path=r["path"],
                embedding_model=r["embedding_model"],
                embedding_dimension=r["embedding_dimension"],
                file_count=r["file_count"],
                chunk_count=r["chunk_count"],
                indexed_at=r["indexed_at"],
            )
            for r in rows
        ]

    async def save_repository(self, repository: Repository) -> None:
        async with self._conn() as (conn, s), conn.transaction():
            await self._check_model(conn, s, repository)
            await conn.execute(
                f"""
                INSERT INTO {s}.repositories
                    (id, name, path, embedding_model, embedding_dimension, indexed_at)
                VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (id) DO UPDATE SET name = $2, path = $3, embedding_model = $4,
                    embedding_dimension = $5, indexed_at = $6
                """,
                repository.id,
                repository.name,
                repository.path,
                repository.embedding_model,
                repository.embedding_dimension,
                repository.indexed_at,
            )

    async def _check_model(self, conn: asyncpg.Connection, s: str, repo: Repository) -> None:
        """One embedding model per project: switching is allowed only when no other
        repository holds vectors of another model (and clears this repository's vectors)."""
        model = repo.embedding_model
        if model is None:
            return
        await conn.execute(f"LOCK TABLE {s}.meta IN EXCLUSIVE MODE")
        others = await conn.fetch(
            f"""
            SELECT r.id, r.name, r.embedding_model FROM {s}.repositories r
            WHERE r.id <> $1 AND r.embedding_model IS DISTINCT FROM $2 AND EXISTS (
                SELECT 1 FROM {s}.chunks c WHERE c.repo_id = r.id AND c.embedding IS NOT NULL)
            ORDER BY r.name
            """,
            repo.id,
            model,
        )
        if others:
            names = ", ".join(f"{o['name']!r} ({o['embedding_model']})" for o in others)
            raise ModelMismatch(
                f"project {self._project_id!r} holds vectors of another model in {names}; "
                f"{model!r} cannot be mixed with them: re-index every repository of the project "
                "with force_reindex using one model, or use another project "
                "(CODEBASE_MCP_PROJECT)",
                repository_id=repo.id,
            )
        previous = await conn.fetchval(
            f"SELECT embedding_model FROM {s}.repositories WHERE id = $1", repo.id
        )
        if previous is not None and previous != model:
            await conn.execute(
                f"UPDATE {s}.chunks SET embedding = NULL WHERE repo_id = $1 "
                "AND embedding IS NOT NULL",
                repo.id,
            )
            await self._recount_vectors(conn, s)
        await conn.execute(
            f"INSERT INTO {s}.meta VALUES ('model', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
            model,
        )
        dimension = repo.embedding_dimension
        stored = await conn.fetchval(f"SELECT value FROM {s}.meta WHERE key = 'dimension'")
        if dimension is not None and stored != str(dimension):
            await self._set_dimension(conn, s, dimension)

    async def _set_dimension(self, conn: asyncpg.Connection, s: str, dimension: int) -> None:
        """Retype the vector column (only ever with no vectors of another size stored)."""
        for seg in await conn.fetch(f"SELECT index_name FROM {s}.ann_segments"):
            await conn.execute(f"DROP INDEX IF EXISTS {s}.{quote_ident(seg['index_name'])}")
        await conn.execute(f"DELETE FROM {s}.ann_segments")
        await conn.execute(
            f"UPDATE {s}.chunks SET embedding = NULL WHERE vector_dims(embedding) <> $1",
            dimension,
        )
        await conn.execute(
            f"ALTER TABLE {s}.chunks ALTER COLUMN embedding TYPE vector({int(dimension)})"
        )
        await self._recount_vectors(conn, s)
        await conn.execute(
            f"INSERT INTO {s}.meta VALUES ('dimension', $1) "
            "ON CONFLICT (key) DO UPDATE SET value = $1",
            str(dimension),
        )
        self._dimension = dimension

    async def get_repository(self, repository_id: str) -> Repository:
        async with self._conn() as (conn, s):
            found = await self._repos(conn, s, "r.id = $1", repository_id)
        if not found:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        return found[0]

    async def find_repository(self, path: str) -> Repository | None:
        async with self._conn() as (conn, s):
            found = await self._repos(conn, s, "r.path = $1", path)
        return found[0] if found else None

    async def list_repositories(self) -> list[Repository]:
        async with self._conn() as (conn, s):
            return await self._repos(conn, s, "true")

    async def delete_repository(self, repository_id: str) -> None:
        async with self._conn() as (conn, s), conn.transaction():
            exists = await conn.fetchval(
                f"SELECT 1 FROM {s}.repositories WHERE id = $1 FOR UPDATE", repository_id
            )
            if not exists:
                raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
            n, length, nvec = await self._delete_chunks(conn, s, repository_id, None)
            await conn.execute(f"DELETE FROM {s}.repositories WHERE id = $1", repository_id)
            await self._add_stats(conn, s, -n, -length, -nvec, changed=n > 0)

    # --- files and chunks ---------------------------------------------------------------

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        async with self._conn() as (conn, s):
            if paths is None:
                rows = await conn.fetch(
                    f"SELECT path, content_hash FROM {s}.files WHERE repo_id = $1", repository_id
                )
            else:
                rows = await conn.fetch(
                    f"SELECT path, content_hash FROM {s}.files "
                    "WHERE repo_id = $1 AND path = ANY($2::text[])",
                    repository_id,
                    list(paths),
                )
        return {r["path"]: r["content_hash"] for r in rows}

    async def _delete_chunks(
        self, conn: asyncpg.Connection, s: str, repo_id: str, paths: Sequence[str] | None
    ) -> tuple[int, int, int]:
        """Delete chunks (of ``paths``, or all of the repository) and their postings; returns
        the (chunks, summed document length, vectors) removed, for ``_add_stats``."""
        where = "repo_id = $1" + ("" if paths is None else " AND file_path = ANY($2::text[])")
        args: list[Any] = [repo_id] if paths is None else [repo_id, list(paths)]
        # New files (every file of a first index) have nothing to delete: one index probe
        # instead of planning and running the statement below.
        if paths is not None and not await conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM {s}.chunks WHERE {where})", *args
        ):
            return 0, 0, 0
        row = await conn.fetchrow(
            f"""
            WITH old AS (
                DELETE FROM {s}.chunks WHERE {where}
                RETURNING seq, repo_id, file_path, language, doc_len, terms, content_hash,
                          embedding
            ), gone AS (
                -- A block of a term starts at the first chunk holding it of its file and
                -- language (see _rows).
                DELETE FROM {s}.postings p
                USING (
                    SELECT t.term, min(o.seq) AS first
                    FROM old o CROSS JOIN LATERAL unnest(o.terms) AS t(term)
                    GROUP BY o.repo_id, o.file_path, o.language, t.term
                ) d
                WHERE p.term = d.term AND p.first = d.first
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
            """,
            *args,
        )
        return int(row["n"]), int(row["len"]), int(row["nvec"])

    @staticmethod
    async def _add_stats(
        conn: asyncpg.Connection,
        s: str,
        n_docs: int,
        total_len: int,
        n_vectors: int,
        *,
        changed: bool,
    ) -> None:
        """Add to the project's document statistics; ``changed``: chunk rows were deleted or
        inserted (the generation moves on, even when the counts come out the same)."""
        # Last in its transaction: the one row every writer updates is locked only briefly.
        if changed or n_docs or total_len or n_vectors:
            await conn.execute(
                f"UPDATE {s}.corpus_stats SET n_docs = n_docs + $1, "
                "total_len = total_len + $2, n_vectors = n_vectors + $3, "
                "generation = generation + 1",
                n_docs,
                total_len,
                n_vectors,
            )

    @staticmethod
    async def _recount_vectors(conn: asyncpg.Connection, s: str) -> None:
        await conn.execute(
            f"UPDATE {s}.corpus_stats SET n_vectors = "
            f"(SELECT count(*) FROM {s}.chunks WHERE embedding IS NOT NULL), "
            "generation = generation + 1"
        )

    def _rows(self, repo_id: str, files: Sequence[IndexedFile], seqs: list[int]) -> _Rows:
        """COPY records for files and chunks, and the binary COPY data of their postings
        (CPU work, run in a thread)."""
        file_rows: list[tuple[Any, ...]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        keys_all: list[int] = []
        tfs_all: list[int] = []
        per_chunk: list[int] = []
        # Postings blocks hold chunks alike in every attribute a search filters on: of one
        # path, and of one language (a chunker may tell the languages of a file apart); the
        # deletion of a file's chunks finds its blocks by the same (path, language).
        block_group: list[int] = []
        groups: dict[tuple[str, str | None], int] = {}
        doc_lens: list[int] = []
        dimension: int | None = None
        it = iter(seqs)
        for f in files:
            sf = f.file
            file_rows.append((repo_id, sf.path, sf.language, sf.content_hash, sf.size, f.text))
            ext = file_extension(sf.path)
            vectors = f.vectors
            for i, c in enumerate(f.chunks):
                seq = next(it)
                terms = lexical.document_terms(c.content, c.file_path, c.symbol)
                tfs = list(terms.values())
                doc_len = sum(tfs)
                keys = [term_key(t) for t in terms]
                keys_all.extend(keys)
                tfs_all.extend(tfs)
                per_chunk.append(len(keys))
                block_group.append(groups.setdefault((c.file_path, c.language), len(groups)))
                doc_lens.append(doc_len)
                vec = None
                if vectors is not None:
                    vec = np.asarray(vectors[i], dtype=np.float32)
                    dimension = vec.shape[0]
                chunk_rows.append(
                    (
                        seq,
                        c.id,
                        repo_id,
                        c.file_path,
                        ext,
                        c.language,
                        c.symbol,
                        c.kind,
                        c.start_line,
                        c.end_line,
                        c.content,
                        c.content_hash,
                        c.token_count,
                        doc_len,
                        keys,
                        vec,
                    )
                )
        counts = np.asarray(per_chunk, dtype=np.int64)
        blocks, _ = postings.binary_blocks(
            np.asarray(keys_all, dtype=np.int64),
            np.repeat(np.asarray(seqs, dtype=np.int64), counts),
            np.asarray(tfs_all, dtype=np.int32),
            np.repeat(np.asarray(doc_lens, dtype=np.int32), counts),
            np.repeat(np.asarray(block_group, dtype=np.int64), counts),
        )
        return _Rows(file_rows, chunk_rows, blocks, len(chunk_rows), int(sum(doc_lens)), dimension)

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        for f in files:
            if f.vectors is not None and len(f.vectors) != len(f.chunks):
                raise ValueError(f"{f.file.path}: {len(f.vectors)} vectors for {len(f.chunks)}")
        if not files:
            return
        n_chunks = sum(len(f.chunks) for f in files)
        async with self._conn() as (conn, s):
            seqs: list[int] = [
                r[0]
                for r in await conn.fetch(
                    f"SELECT nextval(pg_get_serial_sequence('{s}.chunks', 'seq')) "
                    "FROM generate_series(1, $1)",
                    n_chunks,
                )
            ]
            rows = await asyncio.to_thread(self._rows, repository_id, files, seqs)
            paths = [f.file.path for f in files]
            async with conn.transaction():
                if not await self._lock_files(conn, s, repository_id, paths):
                    raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
                if rows.dimension is not None:
                    await self._check_dimension(conn, s, rows.dimension)
                n_old, len_old, vec_old = await self._delete_chunks(conn, s, repository_id, paths)
                files_old = await self._delete_files(conn, s, repository_id, paths)
                await conn.copy_records_to_table(
                    "files",
                    schema_name=s.strip('"'),
                    columns=["repo_id", "path", "language", "content_hash", "size", "body"],
                    records=rows.files,
                )
                await conn.copy_records_to_table(
                    "chunks", schema_name=s.strip('"'), columns=_CHUNK_COLUMNS, records=rows.chunks
                )
                await conn.copy_to_table(
                    "postings",
                    source=io.BytesIO(rows.postings),
                    schema_name=s.strip('"'),
                    columns=list(postings.COLUMNS),
                    format="binary",
                )
                await self._add_counts(
                    conn, s, repository_id, len(rows.files) - files_old, rows.n_docs - n_old
                )
                n_vec = rows.n_docs if rows.dimension is not None else 0
                await self._add_stats(
                    conn,
                    s,
                    rows.n_docs - n_old,
                    rows.total_len - len_old,
                    n_vec - vec_old,
                    changed=rows.n_docs > 0 or n_old > 0,
                )
        self._since_analyze += rows.n_docs
        if rows.dimension is not None:
            # A cheap local trigger; the exact tail size is checked by the build itself.
            self._written += rows.n_docs
            # Counted from the start of the last build: while one runs, the next write past
            # the threshold tries again (a reset here would let the tail grow to two segments
            # and leave a long single-process build running after the load).
            if self._written >= self._ann.segment_rows and self._maybe_start_segment():
                self._written = 0

    async def _check_dimension(self, conn: asyncpg.Connection, s: str, dimension: int) -> None:
        if self._dimension is None:
            value = await conn.fetchval(f"SELECT value FROM {s}.meta WHERE key = 'dimension'")
            self._dimension = int(value) if value is not None else None
        if self._dimension == dimension:
            return
        if self._dimension is None:
            await conn.execute(f"LOCK TABLE {s}.meta IN EXCLUSIVE MODE")
            # A concurrent first writer may have set it while this one waited for the lock.
            value = await conn.fetchval(f"SELECT value FROM {s}.meta WHERE key = 'dimension'")
            if value is None:
                await self._set_dimension(conn, s, dimension)
                return
            self._dimension = int(value)
            if self._dimension == dimension:
                return
        raise ModelMismatch(
            f"project {self._project_id!r} stores {self._dimension}-dimensional vectors, got "
            f"{dimension}: re-index with force_reindex using one embedding model, or use "
            "another project (CODEBASE_MCP_PROJECT)"
        )

    @staticmethod
    async def _lock_files(
        conn: asyncpg.Connection, s: str, repo_id: str, paths: Sequence[str]
    ) -> bool:
        """Lock the repository against deletion and ``paths`` against other writers, until
        the transaction ends; False if there is no such repository. Writers of the same files
        queue here (the locks are taken in one order: no deadlock); writers of other files of
        the repository run side by side up to the update of its counts, which every write
        does last."""
        exists = await conn.fetchval(
            f"SELECT 1 FROM {s}.repositories WHERE id = $1 FOR KEY SHARE", repo_id
        )
        if not exists:
            return False
        await conn.execute(
            "SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::int8[]) AS k",
            sorted({lock_key(s, repo_id, p) for p in paths}),
        )
        return True

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        async with self._conn() as (conn, s), conn.transaction():
            if not await self._lock_files(conn, s, repository_id, paths):
                return 0
            n, length, nvec = await self._delete_chunks(conn, s, repository_id, paths)
            deleted = await self._delete_files(conn, s, repository_id, paths)
            await self._add_counts(conn, s, repository_id, -deleted, -n)
            await self._add_stats(conn, s, -n, -length, -nvec, changed=n > 0)
        return deleted

    @staticmethod
    async def _delete_files(
        conn: asyncpg.Connection, s: str, repo_id: str, paths: Sequence[str]
    ) -> int:
        result: str = await conn.execute(
            f"DELETE FROM {s}.files WHERE repo_id = $1 AND path = ANY($2::text[])",
            repo_id,
            list(paths),
        )
        return int(result.rsplit(" ", 1)[-1])

    @staticmethod
    async def _add_counts(
        conn: asyncpg.Connection, s: str, repo_id: str, files: int, chunks: int
    ) -> None:
        if files or chunks:
            await conn.execute(
                f"UPDATE {s}.repositories SET file_count = file_count + $2, "
                "chunk_count = chunk_count + $3 WHERE id = $1",
                repo_id,
                files,
                chunks,
            )

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        async with self._conn() as (conn, s):
            rows = await conn.fetch(
                f"SELECT path, body FROM {s}.files WHERE repo_id = $1 AND path = ANY($2::text[])",
                repository_id,
                list(paths),
            )
        return {r["path"]: r["body"] for r in rows}

    async def chunks(self, repository_id: str) -> list[Chunk]:
        async with self._conn() as (conn, s):
            if not await conn.fetchval(
                f"SELECT 1 FROM {s}.repositories WHERE id = $1", repository_id
            ):
                raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
            rows = await conn.fetch(
                f"SELECT {_SELECT_CHUNK} FROM {s}.chunks c WHERE c.repo_id = $1 "
                "ORDER BY c.file_path, c.start_line, c.end_line",
                repository_id,
            )
        return [_chunk(r) for r in rows]

    # --- embedding cache ----------------------------------------------------------------

    async def cached_embeddings(
        self, model: str, content_hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        if not content_hashes:
            return {}
        async with self._conn() as (conn, s), conn.transaction(readonly=True):
            # Probes by index, always: during a first load the planner's row estimates lag
            # behind the growing table, and a sequential scan of every stored vector per batch
            # made a 62,000-chunk index spend most of its time here.
            await conn.execute("SET LOCAL enable_seqscan = off")
            rows = await conn.fetch(
                f"""
                SELECT content_hash, embedding FROM {s}.embedding_cache
                WHERE model = $1 AND content_hash = ANY($2::text[])
                UNION ALL
                SELECT h.hash, v.embedding
                FROM unnest($2::text[]) AS h(hash)
                CROSS JOIN LATERAL (
                    SELECT c.embedding FROM {s}.chunks c
                    WHERE c.content_hash = h.hash AND c.embedding IS NOT NULL
                    LIMIT 1
                ) v
                -- Every stored vector is of the project's one model (see _check_model).
                WHERE EXISTS (SELECT 1 FROM {s}.meta WHERE key = 'model' AND value = $1)
                """,
                model,
                list(content_hashes),
            )
        return {r["content_hash"]: r["embedding"].to_list() for r in rows}

    async def cache_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        if not vectors:
            return
        records = [(model, h, np.asarray(v, dtype=np.float32)) for h, v in vectors.items()]
        async with self._conn() as (conn, s), conn.transaction():
            await conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS cache_stage "
                "(model text, content_hash text, embedding vector) ON COMMIT DELETE ROWS"
            )
            await conn.copy_records_to_table("cache_stage", records=records)
            await conn.execute(
                f"INSERT INTO {s}.embedding_cache SELECT * FROM cache_stage "
                "ON CONFLICT (model, content_hash) DO NOTHING"
            )

    # --- search -------------------------------------------------------------------------

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        query = np.asarray(vector, dtype=np.float32)
        async with (
            self._conn() as (conn, s),
            conn.transaction(readonly=True, isolation="repeatable_read"),
        ):
            flt = _Filter(await self._narrowed(conn, s, filters), 2)
            # Everything the plan depends on, in one round trip.
            stats = await conn.fetchrow(
                f"""
                SELECT (SELECT value FROM {s}.meta WHERE key = 'dimension') AS dimension,
                       st.n_docs, st.n_vectors, st.generation,
                       ARRAY(SELECT lo FROM {s}.ann_segments ORDER BY lo) AS los,
                       ARRAY(SELECT hi FROM {s}.ann_segments ORDER BY lo) AS his
                FROM {s}.corpus_stats st
                """
            )
            stored = stats["dimension"]
            if stored is None:
                return [], 0
            if int(stored) != query.shape[0]:
                raise ModelMismatch(
                    f"query vector has {query.shape[0]} dimensions, stored vectors {stored}: "
                    "re-index with force_reindex using one embedding model"
                )
            all_vectors: int = stats["n_vectors"]
            segments = list(zip(stats["los"], stats["his"], strict=True))
            # Filtered: the matches per segment (see _matches). Unfiltered: the maintained
            # counter (counting 100k vectors costs more than the search).
            matches: _Matches | None = None
            if flt.empty:
                total = all_vectors
            else:
                # Filtered statements are planned with the filter's values: a generic plan
                # sees a directory range of unknown width as narrow, and would sort every
                # match by distance instead of walking the graph (6 -> 100 ms on 35k matches).
                await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                matches = await self._matches(conn, s, flt, stats, segments)
                total = sum(matches.counts.values())
            if total == 0:
                return [], 0
            if not float(np.linalg.norm(query)) > 0:
                rows = await conn.fetch(
                    f"SELECT {_SELECT_CHUNK}, 0.0::float8 AS score FROM {s}.chunks c "
                    f"WHERE c.embedding IS NOT NULL AND {flt.sql} "
                    "ORDER BY c.file_path, c.start_line LIMIT $1",
                    limit,
                    *flt.params,
                )
                return [ScoredChunk(chunk=_chunk(r), score=0.0) for r in rows], total
            rows = []
            if segments and total > self._ann.exact_rows:
                rows = await self._ann_search(conn, s, query, flt, limit, segments, matches)
            if len(rows) < min(limit, total):
                rows = await conn.fetch(
                    f"SELECT {_SELECT_CHUNK}, 1 - (c.embedding <=> $1) AS score "
                    f"FROM {s}.chunks c WHERE c.embedding IS NOT NULL AND {flt.sql} "
                    f"ORDER BY c.embedding <=> $1, c.file_path, c.start_line "
                    f"LIMIT {int(limit)}",
                    query,
                    *flt.params,
                )
        return [ScoredChunk(chunk=_chunk(r), score=float(r["score"])) for r in rows], total

    async def _matches(
        self,
        conn: asyncpg.Connection,
        s: str,
        flt: _Filter,
        stats: asyncpg.Record,
        segments: Sequence[tuple[int, int]],
    ) -> _Matches:
        """The chunks with vectors that pass ``flt``, counted per segment (bucket i + 1 is
        segment i, the last bucket the unindexed tail), with the seqs of buckets of at most
        ``exact_rows`` matches (an exact scan then reads just those rows by key, not every row
        of the segment's range), from one pass over the covering path index.

        Remembered per (filter, segments, generation): a generation is moved on by every write
        of chunk rows, so what one snapshot counted holds for every snapshot of the same
        generation, and repeated searches of a directory skip the pass (35k matches: 7 ms),
        as a search engine's filter cache does.
        """
        key = (flt.sql, tuple(flt.params), tuple(segments), int(stats["generation"]))
        cache = self._matches_cache
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
        vec = "" if stats["n_vectors"] == stats["n_docs"] else "c.embedding IS NOT NULL AND "
        bounds = [int(lo) + 1 for lo, _ in segments]
        bounds.append(int(segments[-1][1]) + 1 if segments else 1)
        small = len(flt.params) + 2
        rows = await conn.fetch(
            f"""
            WITH m AS MATERIALIZED (
                SELECT width_bucket(c.seq, $1::int8[]) AS b, c.seq
                FROM {s}.chunks c WHERE {vec}{flt.sql}
            ), n AS (SELECT b, count(*) AS n FROM m GROUP BY b)
            SELECT n.b, n.n,
                   CASE WHEN n.n <= ${small} THEN ARRAY(SELECT m.seq FROM m WHERE m.b = n.b) END
                       AS seqs
            FROM n
            """,
            bounds,
            *flt.params,
            self._ann.exact_rows,
        )
        found = _Matches(
            counts={int(r["b"]): int(r["n"]) for r in rows},
            seqs={int(r["b"]): array.array("q", r["seqs"]) for r in rows if r["seqs"] is not None},
        )
        cache[key] = found
        while len(cache) > _MATCHES_CACHED:
            cache.popitem(last=False)
        return found

    @staticmethod
    async def _narrowed(conn: asyncpg.Connection, s: str, filters: SearchFilters) -> SearchFilters:
        """``filters`` without a repository condition that every chunk of the project meets
        (its only indexed repository, the usual case): the same rows, and no set of 100k
        chunk ids to build for the filter (lexical search with it, 98k chunks: p50 35 -> 9 ms)."""
        if filters.repository_id is None:
            return filters
        whole = await conn.fetchval(
            f"SELECT r.chunk_count = st.n_docs FROM {s}.repositories r, {s}.corpus_stats st "
            "WHERE r.id = $1",
            filters.repository_id,
        )
        return filters.model_copy(update={"repository_id": None}) if whole else filters

    async def _ann_search(
        self,
        conn: asyncpg.Connection,
        s: str,
        query: np.ndarray[Any, Any],
        flt: _Filter,
        limit: int,
        segments: Sequence[tuple[int, int]],
        matches: _Matches | None,
    ) -> list[asyncpg.Record]:
        """Top ``limit`` over the segments' HNSW indexes plus an exact scan of the tail.

        With filters (``matches``), a segment with no match is skipped, one with few matches
        (or so few that HNSW would need a huge candidate list, since it filters after the
        graph walk, or about as many vectors as it holds matches) is scanned exactly, and
        ``hnsw.ef_search`` is widened by the lowest share of matches among the segments walked
        by HNSW. An exact scan reads the matching rows by key when their seqs are known, else
        it filters the segment's range.
        """
        lim = int(limit)
        ann = self._ann
        ef = max(ann.ef_search_min, math.ceil(lim * 1.5))
        params: list[Any] = [query, *flt.params]

        def exact(bucket: int, where: str) -> str:
            seqs = matches.seqs.get(bucket) if matches is not None else None
            if seqs is None:
                return f"{where} AND {flt.sql}"
            params.append(seqs.tolist())
            return f"c.seq = ANY(${len(params)}::int8[])"

        branches: list[str] = []
        for i, (lo, hi) in enumerate(segments):
            where = f"c.seq > {int(lo)} AND c.seq <= {int(hi)}"
            order = "c.embedding <=> $1"
            if matches is not None:
                n = matches.counts.get(i + 1, 0)
                if n == 0:
                    continue
                need = math.ceil(lim * 1.5 * (int(hi) - int(lo)) / n)
                # A walk with a candidate list of ``need`` visits about need * 2m vectors
                # (each candidate's neighbours): no fewer than scanning the matches exactly.
                if n <= ann.exact_segment_rows or need > ann.ef_search_max or n <= need * 2 * ann.m:
                    where = exact(i + 1, where)
                    order = "(c.embedding <=> $1) + 0"  # not the index's ordering: exact
                else:
                    where = f"{where} AND {flt.sql}"
                    ef = max(ef, need)
            branches.append(
                f"(SELECT c.seq, c.embedding <=> $1 AS d FROM {s}.chunks c "
                f"WHERE {where} ORDER BY {order} LIMIT {lim})"
            )
        tail_bucket = len(segments) + 1
        if matches is None or matches.counts.get(tail_bucket, 0):
            where = f"c.seq > {int(segments[-1][1])} AND c.embedding IS NOT NULL"
            where = exact(tail_bucket, where) if matches is not None else where
            branches.append(
                f"(SELECT c.seq, c.embedding <=> $1 AS d FROM {s}.chunks c "
                f"WHERE {where} ORDER BY c.embedding <=> $1 LIMIT {lim})"
            )
        await conn.execute(f"SET LOCAL hnsw.ef_search = {min(ef, ann.ef_search_max)}")
        rows = await conn.fetch(
            f"""
            WITH top AS (SELECT * FROM ({" UNION ALL ".join(branches)}) u ORDER BY d LIMIT {lim})
            SELECT {_SELECT_CHUNK}, 1 - top.d AS score
            FROM top JOIN {s}.chunks c ON c.seq = top.seq
            ORDER BY top.d, c.file_path, c.start_line
            """,
            *params,
        )
        return list(rows)

    async def lexical_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        keys = list(dict.fromkeys(term_key(t) for t in terms))
        if not keys:
            return [], 0
        async with self._conn() as (conn, s), contextlib.AsyncExitStack() as tx:
            if filters.repository_id is not None:
                # One snapshot for the check in _narrowed and the search.
                await tx.enter_async_context(
                    conn.transaction(readonly=True, isolation="repeatable_read")
                )
            flt = _Filter(await self._narrowed(conn, s, filters), 3)
            # One top-N sort with room for ties at the limit; only when the ties run past that
            # room is everything tied with the k-th score fetched, so ties fall to path, line.
            fetch = int(limit) + _TIE_ROOM
            rows = await conn.fetch(self._lexical_sql(s, flt, ties=False), keys, fetch, *flt.params)
            if len(rows) == fetch:
                # The rows come back in join order: rank their scores here.
                raws = sorted((float(r["raw"]) for r in rows), reverse=True)
                if raws[-1] >= raws[int(limit) - 1] - _TIE_TOLERANCE * float(rows[0]["bound"]):
                    rows = await conn.fetch(
                        self._lexical_sql(s, flt, ties=True), keys, int(limit), *flt.params
                    )
        if not rows:
            return [], 0
        total = int(rows[0]["total"])
        bound = float(rows[0]["bound"])
        scored = [(_chunk(r), lexical.normalised(float(r["raw"]), bound)) for r in rows]
        scored.sort(key=lambda cs: (-cs[1], cs[0].file_path, cs[0].start_line))
        return [ScoredChunk(chunk=c, score=sc) for c, sc in scored[:limit]], total

    @staticmethod
    def _lexical_sql(s: str, flt: _Filter, *, ties: bool) -> str:
        """BM25 of every chunk holding a query term ($1: term keys), filtered; the top $2
        (``ties``: every chunk scoring within float noise of the $2-th best)."""
        k1, b = lexical.K1, lexical.B
        # Filtered: the matching chunks first (from the covering path index), joined to the
        # postings before scoring, so only their postings are scored. Materialised, the set
        # can only be hashed: probing the table per scored chunk (the planner's choice when
        # it underestimates a common term's postings) took up to 150 ms.
        fl = (
            ""
            if flt.empty
            else f"fl AS MATERIALIZED (SELECT c.seq FROM {s}.chunks c WHERE {flt.sql}), "
        )
        # The chunks of a block are alike in every filtered attribute (see _rows): the blocks
        # to score are those whose first chunk passes.
        only = "" if flt.empty else "JOIN fl ON fl.seq = p.first"
        if ties:
            top = """
                kth AS (SELECT raw FROM f ORDER BY raw DESC OFFSET $2 - 1 LIMIT 1),
                top AS (
                    SELECT f.chunk, f.raw FROM f, bound
                    WHERE f.raw * {k1p} >= (SELECT coalesce(min(raw), 0) FROM kth) * {k1p}
                                            - {tolerance} * bound.v
                    ORDER BY f.raw DESC LIMIT 1000
                )"""
        else:
            top = "top AS (SELECT f.chunk, f.raw FROM f ORDER BY f.raw DESC LIMIT $2)"
        return f"""
            WITH {fl}st AS (
                -- LIMIT 1: the one row, also to the planner. Until autovacuum first analyses
                -- the table (frequently updated, never vacuumed by us) it guesses 1,330 rows,
                -- so w times 1,330, and hashed all postings of the terms to disk instead of
                -- the filter's chunks: 0.5 s per filtered search for the first ~20 s.
                SELECT n_docs::float8 AS n,
                       CASE WHEN n_docs > 0 THEN total_len::float8 / n_docs ELSE 1 END AS avg
                FROM {s}.corpus_stats LIMIT 1
            ), w AS (
                -- Document frequencies over the whole project, from the postings index; the
                -- length normalisation folded into two constants per query.
                SELECT q.term, ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS idf,
                       {k1 * (1 - b)} AS k, {k1 * b} / st.avg AS m
                FROM unnest($1::int8[]) AS q(term)
                CROSS JOIN LATERAL (
                    SELECT sum(p.n) AS df FROM {s}.postings p WHERE p.term = q.term
                ) d, st
                WHERE d.df > 0
            ), f AS MATERIALIZED (
                -- BM25 / (k1 + 1): idf * tf / (tf + k1 * (1 - b + b * len / avg)), summed.
                -- The blocks are unnested in the select list (one ProjectSet step), not by a
                -- function scan per block, which spooled each block first: a third slower.
                SELECT x.chunk, sum(x.idf * x.tf / (x.tf + x.k + x.m * x.len)) AS raw
                FROM (
                    SELECT w.idf, w.k, w.m, unnest(p.chunks) AS chunk, unnest(p.tfs) AS tf,
                           unnest(p.doc_lens) AS len
                    FROM w JOIN {s}.postings p ON p.term = w.term {only}
                ) x
                GROUP BY x.chunk
            ), bound AS (
                SELECT coalesce(sum(idf) * {k1 + 1.0}, 0) AS v FROM w
            ), {top.format(k1p=k1 + 1.0, tolerance=_TIE_TOLERANCE)}
            SELECT {_SELECT_CHUNK}, top.raw * {k1 + 1.0} AS raw, bound.v AS bound,
                   (SELECT count(*) FROM f) AS total
            FROM top JOIN {s}.chunks c ON c.seq = top.chunk, bound
        """

    # --- indexing lock and ANN maintenance -----------------------------------------------

    @asynccontextmanager
    async def indexing_lock(self, repository_id: str, *, wait: bool) -> AsyncIterator[None]:
        """Serialise indexing of one repository across processes (session advisory lock)."""
        key = lock_key((await self.workspace()).schema, repository_id)
        async with self._db.connection() as conn:
            got = await conn.fetchval("SELECT pg_try_advisory_lock($1)", key)
            if not got:
                if not wait:
                    raise RepositoryBusy(
                        f"repository {repository_id} of project {self._project_id!r} is being "
                        "indexed by another process: retry when it finishes, or wait for it",
                        repository_id=repository_id,
                    )
                await conn.execute("SELECT pg_advisory_lock($1)", key)
            try:
                yield
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute("SELECT pg_advisory_unlock($1)", key)

    def _maybe_start_segment(self) -> bool:
        """Start a background build unless one runs; whether one was started."""
        if any(not t.done() for t in self._builds):
            return False
        task = self._db.spawn(self._project_id, self._build_segments(final=False))
        self._builds.add(task)
        task.add_done_callback(self._builds.discard)
        return True

    async def optimize(self) -> None:
        """Wait for background ANN builds, then index the tail and merge small segments; after a
        large load, vacuum and analyse chunks and postings (see ``_vacuum``)."""
        loaded = self._since_analyze >= self._ann.tail_rows
        # Postings take no part in the ANN builds: with a connection to spare, they are vacuumed
        # while the last builds run (with a pool of two, the indexing lock and a build hold
        # both), and chunks after them (see _build_segments).
        beside = None
        if loaded and self._db.pool_size >= 3:
            beside = asyncio.get_running_loop().create_task(self._vacuum_on_spare("postings"))
        try:
            while self._builds:
                await asyncio.gather(*list(self._builds), return_exceptions=True)
            await self._build_segments(final=True, vacuum=loaded, beside=beside)
        finally:
            if beside is not None:
                await _settle(beside)

    async def _build_segments(
        self, *, final: bool, vacuum: bool = False, beside: asyncio.Task[bool] | None = None
    ) -> None:
        """Build segments while the tail is large enough (``final``: the run's tail too, and
        merge small segments), under the project's build lock; with ``vacuum``, then vacuum
        chunks (a VACUUM waits for an index build, so it is done here, never queued behind
        another process's) and postings unless ``beside`` did."""
        ws = await self.workspace()
        s = ws.quoted
        ann = self._ann
        async with self._db.connection() as conn:
            # One builder per project at a time, across processes.
            key = lock_key(ws.schema, "ann")
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", key):
                return
            try:
                await conn.execute(f"SET maintenance_work_mem = '{int(ann.build_memory_mb)}MB'")
                workers = ann.final_build_workers if final else 0
                await conn.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
                await conn.execute("SET statement_timeout = 0")
                await self._drop_stale(conn, s)
                while True:
                    hi = await conn.fetchval(f"SELECT coalesce(max(hi), 0) FROM {s}.ann_segments")
                    tail = await conn.fetchrow(
                        f"SELECT count(*) AS n, max(seq) AS top FROM {s}.chunks "
                        "WHERE seq > $1 AND embedding IS NOT NULL",
                        hi,
                    )
                    total = await conn.fetchval(f"SELECT n_vectors FROM {s}.corpus_stats")
                    threshold = ann.tail_rows if final else ann.segment_rows
                    if total < ann.min_rows or tail["n"] < threshold:
                        # The writes' trigger counts on from the tail seen here.
                        self._written = int(tail["n"])
                        break
                    await self._create_segment(conn, s, hi, tail["top"])
                if final:
                    await self._merge_segments(conn, s)
                if vacuum:
                    await self._vacuum(conn, "chunks")
                    if beside is None or not await beside:
                        await self._vacuum(conn, "postings")
                    self._since_analyze = 0
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute("SELECT pg_advisory_unlock($1)", key)
                    await conn.execute("RESET ALL")

    async def _vacuum(self, conn: asyncpg.Connection, *tables: str) -> None:
        """VACUUM (ANALYZE) some of the project's tables, after a large load: planner
        statistics (a sample), and the visibility map, without which the index-only scans that
        count filter matches and read postings visit the table for every row (a directory count
        of 35k chunks: 45 -> 12 ms) until autovacuum comes by. The pool resets the session
        (RESET ALL) when the connection goes back."""
        s = (await self.workspace()).quoted
        await conn.execute("SET statement_timeout = 0")
        await conn.execute("VACUUM (ANALYZE) " + ", ".join(f"{s}.{t}" for t in tables))

    async def _vacuum_on_spare(self, *tables: str) -> bool:
        """``_vacuum`` on a connection of its own if one is free; whether it ran."""
        async with self._db.spare_connection() as other:
            if other is None:
                return False
            await self._vacuum(other, *tables)
            return True

    async def _create_segment(self, conn: asyncpg.Connection, s: str, lo: int, hi: int) -> None:
        name = f"ann_{lo}_{hi}"
        ann = self._ann
        try:
            await conn.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {quote_ident(name)} ON {s}.chunks "
                f"USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(ann.m)}, ef_construction = {int(ann.ef_construction)}) "
                f"WHERE seq > {int(lo)} AND seq <= {int(hi)}"
            )
        except BaseException:
            with contextlib.suppress(*DRIVER_ERRORS):
                await conn.execute(f"DROP INDEX IF EXISTS {s}.{quote_ident(name)}")
            raise
        await conn.execute(
            f"INSERT INTO {s}.ann_segments (index_name, lo, hi, m, ef_construction) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            name,
            lo,
            hi,
            ann.m,
            ann.ef_construction,
        )

    async def _drop_stale(self, conn: asyncpg.Connection, s: str) -> None:
        """Drop ANN indexes a killed build left behind (present but not recorded)."""
        rows = await conn.fetch(
            """
            SELECT i.relname FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid
            JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = $1 AND t.relname = 'chunks' AND i.relname LIKE 'ann\\_%'
            """,
            s.strip('"'),
        )
        known = {r[0] for r in await conn.fetch(f"SELECT index_name FROM {s}.ann_segments")}
        for r in rows:
            if r["relname"] not in known:
                await conn.execute(f"DROP INDEX IF EXISTS {s}.{quote_ident(r['relname'])}")

    async def _merge_segments(self, conn: asyncpg.Connection, s: str) -> None:
        while True:
            segs = await conn.fetch(f"SELECT index_name, lo, hi FROM {s}.ann_segments ORDER BY lo")
            if len(segs) <= self._ann.max_segments:
                return
            sizes = [int(g["hi"]) - int(g["lo"]) for g in segs]
            i = min(range(len(segs) - 1), key=lambda j: sizes[j] + sizes[j + 1])
            a, b = segs[i], segs[i + 1]
            await self._create_segment(conn, s, int(a["lo"]), int(b["hi"]))
            async with conn.transaction():
                await conn.execute(
                    f"DELETE FROM {s}.ann_segments WHERE index_name = ANY($1::text[])",
                    [a["index_name"], b["index_name"]],
                )
            for old in (a, b):
                await conn.execute(
                    f"DROP INDEX CONCURRENTLY IF EXISTS {s}.{quote_ident(old['index_name'])}"
                )


async def _settle(task: asyncio.Task[Any]) -> None:
    """Cancel side work if still running and wait for it, its failure dropped: when it ran to
    the end the caller awaited it, else the caller is failing and that is what to report (or
    another process held the build lock). A cancel of the caller itself still raises."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()
