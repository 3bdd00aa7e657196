"""Embedder contract: every adapter must pass every test here.

Vectors are compared with a tolerance: a real model's output may differ in the last bits with
the batch it was computed in (padding, kernel choice), which the contract allows.
"""

from __future__ import annotations

import math

import pytest

from codebase_mcp_search.core.ports import Embedder


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
    result = await embedder.embed_documents(texts)
    vectors = result.vectors
    assert len(vectors) == len(texts)
    assert result.truncated == 0
    assert all(len(v) == embedder.dimension for v in vectors)
    assert all(all(math.isfinite(x) for x in v) for v in vectors)
    again = (await embedder.embed_documents(list(reversed(texts)))).vectors
    for a, b in zip(again, reversed(vectors), strict=True):
        assert a == pytest.approx(b, abs=1e-5)


async def test_empty_batch(embedder: Embedder) -> None:
    assert (await embedder.embed_documents([])).vectors == []


async def test_many_texts_keep_their_order(embedder: Embedder) -> None:
    texts = [f"def handler_{i}(request):\n    return {i} * request.size" for i in range(70)]
    texts[17] = "SELECT name FROM users WHERE id = 1"
    together = (await embedder.embed_documents(texts)).vectors
    assert len(together) == 70
    alone = (await embedder.embed_documents([texts[17]])).vectors[0]
    assert together[17] == pytest.approx(alone, abs=1e-5)


async def test_text_longer_than_the_model_takes_is_embedded_and_counted(
    embedder: Embedder,
) -> None:
    long = "def f():\n" + "    total = compute(total, value) + offset\n" * 3000
    result = await embedder.embed_documents(["def g(): pass", long])
    assert len(result.vectors) == 2
    assert all(len(v) == embedder.dimension for v in result.vectors)
    assert result.truncated in (0, 1)  # 0: a model without an input limit (hashing)


async def test_query_and_related_document_are_closer_than_unrelated(embedder: Embedder) -> None:
    q = await embedder.embed_query("parse config file")
    near, far = (
        await embedder.embed_documents(
            ["def parse_config_file(path):\n    return load(path)", "SELECT count(*) FROM users"]
        )
    ).vectors
    assert len(q) == embedder.dimension
    assert _cos(q, near) > _cos(q, far)
