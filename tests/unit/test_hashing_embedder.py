"""HashingEmbedder: the batched numpy computation is the scalar definition, bit for bit."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.hashing import embedder as embedder_module
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.ports import Embedder


def reference(text: str, dimension: int) -> list[float]:
    """The definition, one text at a time in plain Python (the model ``hash-N`` stands for)."""
    terms = lexical.analyse(text)
    features = Counter(terms)
    features.update(f"{a} {b}" for a, b in itertools.pairwise(terms))
    vec = [0.0] * dimension
    for feature, tf in features.items():
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dimension
        vec[bucket] += (1.0 if digest[4] & 1 else -1.0) * (1.0 + math.log(tf))
    # Summed one slot after another (Python 3.12's sum() compensates, and may differ in the
    # last bit from the definition's plain running sum).
    squares = 0.0
    for v in vec:
        squares += v * v
    norm = math.sqrt(squares)
    return [v / norm for v in vec] if norm > 0 else vec


WORDS = ["load", "user", "getUserName", "HTTPServer", "x", "the", "parse_json", "42", "é", "a1"]
code_text = st.lists(
    st.one_of(st.sampled_from(WORDS), st.sampled_from([" ", "\n", "(", ")", ".", "=="])),
    max_size=60,
).map("".join)
texts = st.lists(st.one_of(code_text, st.text(max_size=80)), max_size=12)


def test_is_an_embedder_with_a_stable_model_name() -> None:
    emb = HashingEmbedder(64)
    assert isinstance(emb, Embedder)
    assert (emb.model, emb.dimension) == ("hash-64", 64)
    with pytest.raises(ValidationFailed):
        HashingEmbedder(7)


@settings(max_examples=150, deadline=None)
@given(batch=texts, dimension=st.sampled_from([8, 64, 384]))
async def test_vectors_equal_the_definition_exactly(batch: list[str], dimension: int) -> None:
    emb = HashingEmbedder(dimension)
    assert _lists((await emb.embed_documents(batch)).vectors) == [
        reference(t, dimension) for t in batch
    ]
    for text in batch[:3]:
        assert await emb.embed_query(text) == reference(text, dimension)


async def test_texts_without_terms_give_zero_vectors_and_others_unit_norm() -> None:
    vectors = _lists(
        (await HashingEmbedder(16).embed_documents(["", "  \n", "= ( )", "load user"])).vectors
    )
    assert vectors[:3] == [[0.0] * 16] * 3
    assert math.isclose(sum(v * v for v in vectors[3]), 1.0)
    assert _lists((await HashingEmbedder(16).embed_documents([])).vectors) == []


async def test_same_vectors_whatever_the_batching_and_history() -> None:
    batch = [f"def load_{i}(user{i % 7}): return parse(user{i % 7}, {i})" for i in range(40)]
    one_call = _lists((await HashingEmbedder(32).embed_documents(batch)).vectors)
    emb = HashingEmbedder(32)
    one_by_one = [await emb.embed_query(t) for t in reversed(batch)][::-1]
    assert one_call == one_by_one == [reference(t, 32) for t in batch]


async def test_bounded_tables_and_slices_keep_the_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny limits: the term and bigram tables start afresh and merge often, texts are sliced.
    monkeypatch.setattr(embedder_module, "_MAX_TERMS", 8)
    monkeypatch.setattr(embedder_module, "_MAX_BIGRAMS", 16)
    monkeypatch.setattr(embedder_module, "_RECENT_BIGRAMS", 4)
    monkeypatch.setattr(embedder_module, "_SLICE", 3)
    batch = [" ".join(f"w{(i * 7 + j) % 50}" for j in range(i % 9)) for i in range(30)]
    emb = HashingEmbedder(64)
    for _ in range(2):
        assert _lists((await emb.embed_documents(batch)).vectors) == [
            reference(t, 64) for t in batch
        ]


async def test_very_frequent_terms_weigh_as_defined() -> None:
    texts = ["load " * 5000 + "user", "x " * 10 + "load user " * 300]
    assert _lists((await HashingEmbedder(64).embed_documents(texts)).vectors) == [
        reference(t, 64) for t in texts
    ]


async def test_returned_vectors_are_read_only_and_outlive_later_calls() -> None:
    emb = HashingEmbedder(32)
    first = (await emb.embed_documents(["load user", "parse the config file"])).vectors
    kept = _lists(first)
    await emb.embed_documents(["something else entirely"] * 600)  # reuses its buffers
    await emb.embed_query("and a query")
    assert _lists(first) == kept
    with pytest.raises(ValueError, match="read-only"):
        first[0][0] = 1.0  # type: ignore[index]


def _lists(vectors: Sequence[Sequence[float]]) -> list[list[float]]:
    """Vectors as lists of Python floats (the embedder returns rows of a numpy array)."""
    return [[float(x) for x in v] for v in vectors]
