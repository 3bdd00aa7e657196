"""EmbeddingCache contract: every store adapter passes it."""

from __future__ import annotations

import pytest

from codebase_mcp_search.core.ports import (
    ChunkStore,
)
from tests.factories import file_batch, repo


async def test_embedding_cache_is_keyed_by_model(chunk_store: ChunkStore) -> None:
    await chunk_store.cache_embeddings("m1", {"h1": [0.5, 0.25], "h2": [1.0, 0.0]})
    assert await chunk_store.cached_embeddings("m1", ["h1", "h3"]) == {"h1": [0.5, 0.25]}
    assert await chunk_store.cached_embeddings("m2", ["h1"]) == {}


async def test_stored_vectors_serve_the_embedding_cache_after_replacement(
    chunk_store: ChunkStore,
) -> None:
    r = repo().model_copy(update={"embedding_model": "m1", "embedding_dimension": 2})
    await chunk_store.save_repository(r)
    first = file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])
    await chunk_store.replace_files("r1", [first])
    h = first.chunks[0].content_hash
    assert await chunk_store.cached_embeddings("m1", [h]) == {h: pytest.approx([0.6, 0.8])}
    assert await chunk_store.cached_embeddings("m2", [h]) == {}
    # The file changes: the old chunk's vector stays cached (an edit undone costs nothing).
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def b():\n    return 2"], [[1.0, 0.0]])]
    )
    assert await chunk_store.cached_embeddings("m1", [h]) == {h: pytest.approx([0.6, 0.8])}
