"""The embedding cache: vectors kept by (model, content hash), looked up together with the
vectors of stored chunks of the same content, so unchanged or moved code is never embedded
twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Statement

# Probes by index, always: during a first load the planner's row estimates lag behind the
# growing table, and a sequential scan of every stored vector per batch made a large first
# index spend most of its time here.
INDEX_PROBES: Final = "SET LOCAL enable_seqscan = off"
CACHED = Statement(
    """
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
    -- Every stored vector is of the project's one model (see ModelGuard).
    WHERE EXISTS (SELECT 1 FROM {s}.meta WHERE key = 'model' AND value = $1)
    """
)
STAGE: Final = """
    CREATE TEMP TABLE IF NOT EXISTS cache_stage (model text, content_hash text, embedding vector)
    ON COMMIT DELETE ROWS
"""
ADD_STAGED = Statement(
    """INSERT INTO {s}.embedding_cache SELECT * FROM cache_stage
       ON CONFLICT (model, content_hash) DO NOTHING"""
)


async def cached(
    db: ProjectSession, model: str, content_hashes: Sequence[str]
) -> dict[str, list[float]]:
    """The vectors of ``model`` known for ``content_hashes``: cached, or held by a chunk."""
    async with db.conn.transaction(readonly=True):
        await db.conn.execute(INDEX_PROBES)
        rows = await db.conn.fetch(db.sql(CACHED), model, list(content_hashes))
    return {r["content_hash"]: r["embedding"].to_list() for r in rows}


def records(model: str, vectors: Mapping[str, Sequence[float]]) -> list[tuple[Any, ...]]:
    """The COPY records of ``vectors`` (by content hash) for ``add``."""
    import numpy as np

    return [(model, h, np.asarray(v, dtype=np.float32)) for h, v in vectors.items()]


async def add(db: ProjectSession, rows: list[tuple[Any, ...]]) -> None:
    """Cache ``rows`` (of ``records``); a vector already cached for its model and hash is kept."""
    async with db.conn.transaction():
        await db.conn.execute(STAGE)
        await db.conn.copy_records_to_table("cache_stage", records=rows)
        await db.conn.execute(db.sql(ADD_STAGED))
