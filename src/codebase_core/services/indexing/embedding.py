"""Vectors for chunks: taken from the store's embedding cache where it holds them (as a
lexical run writes its chunks: an unchanged or moved text is never embedded twice), and
embedded in batches for the semantic layer (``services.indexing.vectors``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.models import Chunk, Embeddings, PreparedFile
from codebase_mcp_search.core.ports import Embedder, EmbeddingCache


async def attach_cached(cache: EmbeddingCache, model: str, prepared: list[PreparedFile]) -> int:
    """Attach to ``prepared`` (in place) the vectors of ``model`` the cache holds for their
    chunks' texts, None for the others (left to the semantic layer); how many were found."""
    hashes = list(dict.fromkeys(c.content_hash for p in prepared for c in p.chunks))
    if not hashes:
        return 0
    known = await cache.cached_embeddings(model, hashes)
    if not known:
        return 0
    found = 0
    for i, p in enumerate(prepared):
        vectors = [known.get(c.content_hash) for c in p.chunks]
        found += sum(v is not None for v in vectors)
        prepared[i] = dataclasses.replace(p, vectors=vectors)
    return found


async def attach_embedded(
    cache: EmbeddingCache, embedder: Embedder, prepared: list[PreparedFile]
) -> tuple[int, int]:
    """Attach to ``prepared`` (in place) a vector for every chunk, from the cache or embedded
    (an inline embedder's run); how many texts were embedded and how many chunks cached."""
    chunks = [c for p in prepared for c in p.chunks]
    if not chunks:
        return 0, 0
    vectors, embedded, _ = await vectors_for(cache, embedder, chunks)
    for i, p in enumerate(prepared):
        prepared[i] = dataclasses.replace(p, vectors=[vectors[c.id] for c in p.chunks])
    return embedded, len(chunks) - embedded


async def vectors_for(
    cache: EmbeddingCache, embedder: Embedder, chunks: Sequence[Chunk]
) -> tuple[dict[str, Sequence[float]], int, int]:
    """A vector for each of ``chunks`` (by chunk id): from the cache, else embedded (each
    distinct text once). Returns them with how many texts the model embedded and how many
    of those it cut to fit. Raises ``EmbedderUnavailable`` when the embedder fails or returns
    the wrong number of vectors."""
    model = embedder.model
    texts = {c.content_hash: c.content for c in chunks}
    known: dict[str, Sequence[float]] = dict(await cache.cached_embeddings(model, list(texts)))
    missing = [h for h in texts if h not in known]
    result = Embeddings(vectors=[])
    if missing:
        result = await embedder.embed_documents([texts[h] for h in missing])
        if len(result.vectors) != len(missing):
            raise EmbedderUnavailable(
                f"embedder {model} returned {len(result.vectors)} vectors for {len(missing)} texts"
            )
        known.update(zip(missing, result.vectors, strict=True))
    return {c.id: known[c.content_hash] for c in chunks}, len(missing), result.truncated
