"""Vectors for prepared files: taken from the store's embedding cache where it has them,
embedded otherwise (each distinct chunk text once)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.models import PreparedFile
from codebase_mcp_search.core.ports import Embedder, EmbeddingCache


async def attach_vectors(
    cache: EmbeddingCache,
    embedder: Embedder,
    prepared: list[PreparedFile],
    embedding: Callable[[int], Awaitable[None]] | None = None,
) -> tuple[int, int, int]:
    """Attach vectors to ``prepared`` (in place), embedding only chunk texts the cache lacks;
    ``embedding`` hears how many texts go to the model, before they go.

    Returns (newly embedded, taken from the cache, truncated to fit the model). Raises
    ``EmbedderUnavailable`` when the embedder fails or returns the wrong number of vectors.
    """
    model = embedder.model
    texts_by_hash: dict[str, str] = {}
    for p in prepared:
        for c in p.chunks:
            texts_by_hash.setdefault(c.content_hash, c.content)
    if not texts_by_hash:
        return 0, 0, 0
    known: dict[str, Sequence[float]] = dict(
        await cache.cached_embeddings(model, list(texts_by_hash))
    )
    missing = [h for h in texts_by_hash if h not in known]
    truncated = 0
    if missing:
        if embedding is not None:
            await embedding(len(missing))
        result = await embedder.embed_documents([texts_by_hash[h] for h in missing])
        if len(result.vectors) != len(missing):
            raise EmbedderUnavailable(
                f"embedder {model} returned {len(result.vectors)} vectors for {len(missing)} texts"
            )
        truncated = result.truncated
        # No cache_embeddings here: replace_files makes the vectors it stores available to
        # cached_embeddings (see ChunkWriter), so a large first index writes them once.
        known.update(zip(missing, result.vectors, strict=True))
    for i, p in enumerate(prepared):
        prepared[i] = dataclasses.replace(p, vectors=[known[c.content_hash] for c in p.chunks])
    return len(missing), len(texts_by_hash) - len(missing), truncated
