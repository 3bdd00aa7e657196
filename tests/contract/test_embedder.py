"""Embedder contract: every adapter must pass every test here."""

from __future__ import annotations

import math

from codebase_core.ports import Embedder


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_is_an_embedder(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model and embedder.dimension > 0


async def test_one_vector_per_text_in_order(embedder: Embedder) -> None:
    texts = [
        "def parse_config(path): ...",
        "class HTTPServer: pass",
        "",
        "naïve ünïcode <|endoftext|>",
    ]
    vectors = await embedder.embed_documents(texts)
    assert len(vectors) == len(texts)
    assert all(len(v) == embedder.dimension for v in vectors)
    assert all(all(math.isfinite(x) for x in v) for v in vectors)
    again = await embedder.embed_documents(list(reversed(texts)))
    assert again == list(reversed(vectors))


async def test_empty_batch(embedder: Embedder) -> None:
    assert await embedder.embed_documents([]) == []


async def test_query_and_related_document_are_closer_than_unrelated(embedder: Embedder) -> None:
    q = await embedder.embed_query("parse config file")
    near, far = await embedder.embed_documents(
        ["def parse_config_file(path):\n    return load(path)", "SELECT count(*) FROM users"]
    )
    assert len(q) == embedder.dimension
    assert _cos(q, near) > _cos(q, far)
