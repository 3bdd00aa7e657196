"""Bench-only: embed a chunk's context (file path, symbol) before its text (issue 36, round five).

The product embeds each chunk's ``content`` alone (``services.indexing.embedding.vectors_for``).
``install(variant)`` replaces that function, in the two modules that call it, by one that
embeds a header line before the content, the query side unchanged (but for ``split``):

- ``plain``: the content alone (today's text, embedded afresh and timed by the same code);
- ``path``: ``# src/x/y.py`` + newline + content;
- ``path_symbol``: ``# src/x/y.py: Class.method`` + newline + content (a chunk without a
  symbol gets the ``path`` header);
- ``split``: the content with camelCase identifiers split into words (``safeParse`` ->
  ``safe Parse``), and every query split alike (round ten).

The vectors are cached under a key of their own (variant, path, symbol and content hash), so a
plain vector (cached by content hash) is never taken for one with a header, nor one path's for
another's. ``STATS`` counts what was embedded: texts, tokens the model ran with and without the
header (each capped at the token budget, as the model runs them), and seconds in the model.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.models import Chunk, Embeddings
from codebase_mcp_search.core.ports import Embedder, EmbeddingCache
from codebase_mcp_search.core.services.indexing import embedding as embedding_module
from codebase_mcp_search.core.services.indexing import vectors as vectors_module

# Where a camelCase identifier joins two words (``safeParse``, ``HTTPServer``): the model's
# uncased WordPiece reads ``safeparse`` as pieces of no word, ``safe parse`` as two words.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifiers(text: str) -> str:
    """``text`` with each camelCase identifier's words apart (``safeParse`` -> ``safe Parse``)."""
    return _CAMEL.sub(" ", text)


# Variants that change the text the model reads, documents and queries alike (applied in the
# in-process embedder's encode, so the query side is split as the chunks are).
TRANSFORMS: dict[str, Callable[[str], str]] = {"split": split_identifiers}

VARIANTS: dict[str, Callable[[Chunk], str] | None] = {
    # The content alone, as the product embeds it, but embedded afresh through this path
    # (its own cache key and the same counts): today's baseline, timed alike.
    "plain": None,
    "path": lambda c: f"# {c.file_path}",
    "path_symbol": lambda c: f"# {c.file_path}: {c.symbol}" if c.symbol else f"# {c.file_path}",
    # The content alone, camelCase identifiers split (``TRANSFORMS``), queries too.
    "split": None,
}

STATS: dict[str, Any] = {
    "texts": 0,
    "tokens_plain": 0,
    "tokens_header": 0,
    "embed_s": 0.0,
    "truncated": 0,
}


def reset() -> None:
    """Start counting afresh (one count per recording)."""
    STATS.update(texts=0, tokens_plain=0, tokens_header=0, embed_s=0.0, truncated=0)


def key(variant: str, chunk: Chunk) -> str:
    """The cache key of ``chunk``'s vector with ``variant``'s header."""
    raw = f"ctx:{variant}\0{chunk.file_path}\0{chunk.symbol or ''}\0{chunk.content_hash}"
    return "ctx-" + hashlib.sha256(raw.encode()).hexdigest()


def text(variant: str, chunk: Chunk) -> str:
    header = VARIANTS[variant]
    return chunk.content if header is None else header(chunk) + "\n" + chunk.content


def _count_tokens(embedder: Embedder, plain: list[str], headed: list[str]) -> None:
    tokenizer = getattr(embedder, "_tokenizer", None)
    if tokenizer is None:
        return
    STATS["tokens_plain"] += sum(len(e.ids) for e in tokenizer.encode_batch(plain))
    STATS["tokens_header"] += sum(len(e.ids) for e in tokenizer.encode_batch(headed))


def install(variant: str | None) -> None:
    """Embed chunks with ``variant``'s header from now on (None or ``none``: unchanged)."""
    if variant in (None, "none"):
        return
    if variant not in VARIANTS:
        raise SystemExit(f"unknown context variant {variant!r} (choose from {list(VARIANTS)})")

    async def vectors_for(
        cache: EmbeddingCache, embedder: Embedder, chunks: Sequence[Chunk]
    ) -> tuple[dict[str, Sequence[float]], int, int]:
        model = embedder.model
        keys = {c.id: key(variant, c) for c in chunks}
        texts = {keys[c.id]: c for c in chunks}
        known: dict[str, Sequence[float]] = dict(await cache.cached_embeddings(model, list(texts)))
        missing = [k for k in texts if k not in known]
        result = Embeddings(vectors=[])
        if missing:
            headed = [text(variant, texts[k]) for k in missing]
            started = time.perf_counter()
            result = await embedder.embed_documents(headed)
            STATS["embed_s"] += time.perf_counter() - started
            if len(result.vectors) != len(missing):
                raise EmbedderUnavailable(
                    f"embedder {model} returned {len(result.vectors)} vectors "
                    f"for {len(missing)} texts"
                )
            STATS["texts"] += len(missing)
            STATS["truncated"] += result.truncated
            _count_tokens(embedder, [texts[k].content for k in missing], headed)
            fresh = dict(zip(missing, result.vectors, strict=True))
            await cache.cache_embeddings(model, fresh)
            known.update(fresh)
        return {c.id: known[keys[c.id]] for c in chunks}, len(missing), result.truncated

    transform = TRANSFORMS.get(variant)
    if transform is not None:
        from codebase_mcp_search.adapters.onnx.embedder import OnnxEmbedder

        encode = OnnxEmbedder._encode

        def transformed(self: OnnxEmbedder, texts: list[str], kind: str) -> Embeddings:
            return encode(self, [transform(t) for t in texts], kind)

        setattr(OnnxEmbedder, "_encode", transformed)  # noqa: B010

    # Both callers: the semantic layer's run, and an inline embedder's lexical run.
    setattr(vectors_module, "vectors_for", vectors_for)  # noqa: B010
    setattr(embedding_module, "vectors_for", vectors_for)  # noqa: B010


def summary() -> dict[str, Any]:
    """``STATS`` with the mean tokens per embedded chunk, with and without the header."""
    n = STATS["texts"] or 1
    out = dict(STATS)
    out["embed_s"] = round(out["embed_s"], 2)
    if STATS["tokens_plain"]:
        out["tokens_per_chunk_plain"] = round(STATS["tokens_plain"] / n, 1)
        out["tokens_per_chunk_header"] = round(STATS["tokens_header"] / n, 1)
        out["tokens_added_per_chunk"] = round(
            (STATS["tokens_header"] - STATS["tokens_plain"]) / n, 1
        )
    return out
