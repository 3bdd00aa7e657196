"""The one-model rule as the store applies it: the project's embedding model and vector
dimension (kept in ``meta``), checked on saving a repository and on writing vectors, with the
vector column retyped when the only holder switches models. The rule and its message are
``core.policies.one_model``'s; this module only supplies what the project holds. The dimension is read
through ``Dimension``: ``StoredDimension`` reads it for every write, ``memos.KeptDimension``
keeps it once known."""

from __future__ import annotations

from typing import Protocol

from codebase_mcp_search.adapters.postgres.chunk_store.segments import drop_segments
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement

LOCK_META = Statement("LOCK TABLE {s}.meta IN EXCLUSIVE MODE")
# Another repository indexed with another model than $2 (its vectors built or being built:
# it holds chunks).
OTHER_MODEL = Statement(
    """
    SELECT r.id, r.name, r.path, r.embedding_model, r.embedding_dimension
    FROM {s}.repositories r
    WHERE r.id <> $1 AND r.embedding_model IS NOT NULL AND r.embedding_model <> $2
      AND EXISTS (SELECT 1 FROM {s}.files f WHERE f.repo_id = r.id)
    ORDER BY r.name
    """
)
REPOSITORY_MODEL = Statement("SELECT embedding_model FROM {s}.repositories WHERE id = $1")
CLEAR_REPOSITORY_VECTORS = Statement(
    "UPDATE {s}.chunks SET embedding = NULL WHERE repo_id = $1 AND embedding IS NOT NULL"
)
SET_MODEL = Statement(
    "INSERT INTO {s}.meta VALUES ('model', $1) ON CONFLICT (key) DO UPDATE SET value = $1"
)
DIMENSION = Statement("SELECT value FROM {s}.meta WHERE key = 'dimension'")
CLEAR_OTHER_DIMENSIONS = Statement(
    "UPDATE {s}.chunks SET embedding = NULL WHERE vector_dims(embedding) <> $1"
)
# A type modifier takes no parameter: the dimension (an int) is put in the text.
RETYPE_VECTORS = Statement("ALTER TABLE {s}.chunks ALTER COLUMN embedding TYPE vector({n})")
SET_DIMENSION = Statement(
    "INSERT INTO {s}.meta VALUES ('dimension', $1) ON CONFLICT (key) DO UPDATE SET value = $1"
)
from codebase_mcp_search.core.models import Repository
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model


class Dimension(Protocol):
    async def get(self, db: ProjectSession) -> int | None:
        """The project's vector dimension (None: not set yet)."""
        ...

    def learned(self, dimension: int) -> None:
        """The project's dimension is now ``dimension`` (set, or read under the lock)."""
        ...


class StoredDimension:
    """The dimension as ``meta`` holds it, read every time."""

    async def get(self, db: ProjectSession) -> int | None:
        value = await db.conn.fetchval(db.sql(DIMENSION))
        return int(value) if value is not None else None

    def learned(self, dimension: int) -> None:
        pass


class ModelGuard:
    """The one-model rule of one project."""

    def __init__(self, dimension: Dimension) -> None:
        self._dimension = dimension

    async def check_repository(self, db: ProjectSession, repo: Repository) -> None:
        """One embedding model per project: switching is allowed only when no other
        repository holds vectors of another model (and clears this repository's vectors).
        Runs in the caller's transaction."""
        model = repo.embedding_model
        if model is None:
            return
        conn = db.conn
        await conn.execute(db.sql(LOCK_META))
        other = await conn.fetchrow(db.sql(OTHER_MODEL), repo.id, model)
        if other is not None:
            held = HeldVectors(
                model=other["embedding_model"],
                dimension=other["embedding_dimension"],
                repository=other["name"],
                repository_id=other["id"],
                path=other["path"],
            )
            check_one_model(held, model, repo.embedding_dimension)
        previous = await conn.fetchval(db.sql(REPOSITORY_MODEL), repo.id)
        if previous is not None and previous != model:
            await conn.execute(db.sql(CLEAR_REPOSITORY_VECTORS), repo.id)
            await db.recount_vectors()
        await conn.execute(db.sql(SET_MODEL), model)
        dimension = repo.embedding_dimension
        stored = await conn.fetchval(db.sql(DIMENSION))
        if dimension is not None and stored != str(dimension):
            await self._set_dimension(db, dimension)

    async def check_dimension(self, db: ProjectSession, dimension: int) -> None:
        """Vectors of ``dimension`` may be written: the project's dimension, or none yet (then
        it becomes the project's). Runs in the caller's transaction."""
        known = await self._dimension.get(db)
        if known is None:
            await db.conn.execute(db.sql(LOCK_META))
            # A concurrent first writer may have set it while this one waited for the lock.
            value = await db.conn.fetchval(db.sql(DIMENSION))
            if value is None:
                await self._set_dimension(db, dimension)
                return
            known = int(value)
            self._dimension.learned(known)
        check_one_model(HeldVectors(model=None, dimension=known), None, dimension)

    async def _set_dimension(self, db: ProjectSession, dimension: int) -> None:
        """Retype the vector column (only ever with no vectors of another size stored)."""
        conn = db.conn
        await drop_segments(db)
        await conn.execute(db.sql(CLEAR_OTHER_DIMENSIONS), dimension)
        await conn.execute(db.sql(RETYPE_VECTORS, n=int(dimension)))
        await db.recount_vectors()
        await conn.execute(db.sql(SET_DIMENSION), str(dimension))
        self._dimension.learned(dimension)
