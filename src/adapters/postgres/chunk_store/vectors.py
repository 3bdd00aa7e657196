"""The semantic layer's writes: vectors for chunks the lexical layer wrote without one, found
oldest first and stored batch by batch, each batch one transaction. Chunk ids hash a chunk's
repository, path, lines and text, so a vector is stored only on the chunk it was computed
for: a chunk replaced since is gone, and its vector is dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from codebase_mcp_search.adapters.postgres.chunk_store.model_guard import ModelGuard
from codebase_mcp_search.adapters.postgres.chunk_store.rows import SELECT_CHUNK, chunk_of
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.models import Chunk

# Oldest first (insertion order): vectors then fill the seq order from its start, and an ANN
# segment can be built over a prefix that holds all its vectors (see segments.TAIL).
BACKLOG = Statement(
    """SELECT {chunk} FROM {s}.chunks c
       WHERE c.repo_id = $1 AND c.embedding IS NULL ORDER BY c.seq LIMIT $2""",
    chunk=SELECT_CHUNK,
)
WITHOUT_VECTORS = Statement(
    "SELECT id FROM {s}.chunks WHERE id = ANY($1::text[]) AND embedding IS NULL"
)
# A batch's vectors are copied into a temporary table (binary COPY, as chunks are written),
# then set from it in one statement.
STAGE: Final = """
    CREATE TEMP TABLE IF NOT EXISTS vector_stage (id text, embedding vector)
    ON COMMIT DELETE ROWS
"""
STORE = Statement(
    """UPDATE {s}.chunks c SET embedding = v.embedding FROM vector_stage v
       WHERE c.id = v.id AND c.repo_id = $1 AND c.embedding IS NULL"""
)
ADD_VECTOR_COUNT = Statement(
    "UPDATE {s}.repositories SET vector_count = vector_count + $2 WHERE id = $1"
)


async def backlog(db: ProjectSession, repository_id: str, limit: int) -> list[Chunk]:
    """Chunks of the repository without a vector, oldest first, at most ``limit``."""
    return [chunk_of(r) for r in await db.conn.fetch(db.sql(BACKLOG), repository_id, limit)]


async def without(db: ProjectSession, chunk_ids: Sequence[str]) -> set[str]:
    """Of ``chunk_ids``, the indexed chunks holding no vector."""
    rows = await db.conn.fetch(db.sql(WITHOUT_VECTORS), list(chunk_ids))
    return {r["id"] for r in rows}


async def store(
    db: ProjectSession, models: ModelGuard, repository_id: str, vectors: Mapping[str, Any]
) -> int:
    """Store each vector on its chunk if the chunk is still indexed and holds none, in the
    caller's transaction (the repository row locked); how many were stored."""
    import numpy as np

    records = [(cid, np.asarray(v, dtype=np.float32)) for cid, v in vectors.items()]
    await models.check_dimension(db, len(records[0][1]))
    await db.conn.execute(STAGE)
    await db.conn.copy_records_to_table("vector_stage", records=records)
    status: str = await db.conn.execute(db.sql(STORE), repository_id)
    stored = int(status.rsplit(" ", 1)[-1])
    if stored:
        await db.conn.execute(db.sql(ADD_VECTOR_COUNT), repository_id, stored)
        await db.add_stats(0, 0, stored, changed=True)
    return stored
