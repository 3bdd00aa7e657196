"""The Postgres store's reading of postings blocks sent as concatenated binary arrays, and the
summing of their contributions per chunk."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import elements, summed

INT8_OID, INT4_OID = 20, 23


def _array(values: list[int], oid: int, width: int) -> bytes:
    """One array as PostgreSQL's ``array_send`` writes it (one dimension, no nulls)."""
    fmt = ">q" if width == 8 else ">i"
    head = struct.pack(">iiiii", 1, 0, oid, len(values), 1)
    return head + b"".join(struct.pack(">i", width) + struct.pack(fmt, v) for v in values)


def test_blocks_are_read_back_in_order() -> None:
    blocks = [[5, 9, 2**40], [7], [1, 2]]
    data = b"".join(_array(b, INT8_OID, 8) for b in blocks)
    sizes = np.array([len(b) for b in blocks])
    assert elements(data, sizes, ">i8").tolist() == [v for b in blocks for v in b]
    tfs = [[3, 1, 4], [1], [5, 9]]
    data4 = b"".join(_array(b, INT4_OID, 4) for b in tfs)
    assert elements(data4, sizes, ">i4").tolist() == [v for b in tfs for v in b]


@pytest.mark.parametrize(
    "sizes",
    [
        [3, 1, 3],  # a byte count that cannot match
        [2, 2, 2],  # the right total, the blocks cut in the wrong places
    ],
)
def test_sizes_that_do_not_match_the_headers_are_refused(sizes: list[int]) -> None:
    blocks = [[5, 9, 11], [7], [1, 2]]
    data = b"".join(_array(b, INT8_OID, 8) for b in blocks)
    with pytest.raises(ValueError, match="postings arrays"):
        elements(data, np.array(sizes), ">i8")


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(st.lists(st.integers(-(2**62), 2**62), max_size=6), max_size=8),
    width=st.sampled_from([4, 8]),
)
def test_any_values_are_read_back(blocks: list[list[int]], width: int) -> None:
    if width == 4:
        blocks = [[v % 2**31 - 2**30 for v in b] for b in blocks]
    oid, kind = (INT8_OID, ">i8") if width == 8 else (INT4_OID, ">i4")
    data = b"".join(_array(b, oid, width) for b in blocks)
    sizes = np.array([len(b) for b in blocks], dtype=np.int64)
    assert elements(data, sizes, kind).tolist() == [v for b in blocks for v in b]


def _unique_summed(seqs: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    distinct, inverse = np.unique(seqs, return_inverse=True)
    return distinct, np.bincount(inverse, weights=weights, minlength=len(distinct))


@settings(max_examples=300, deadline=None)
@given(
    postings=st.lists(st.tuples(st.integers(0, 3_000), st.floats(1e-9, 50.0)), max_size=300),
    offset=st.sampled_from([0, 1, 10**6, 2**40]),
    spread=st.sampled_from([1, 1_000_000]),
)
def test_summed_per_chunk_to_the_last_bit(
    postings: list[tuple[int, float]], offset: int, spread: int
) -> None:
    """Dense (seqs close together) or sorted (far apart), the sums are those of np.unique and
    np.bincount bit for bit: the scores, and so the top chunks, do not move."""
    seqs = np.array([offset + s * spread for s, _ in postings], dtype=np.int64)
    weights = np.array([w for _, w in postings], dtype=np.float64)
    got_seqs, got = summed(seqs, weights)
    want_seqs, want = _unique_summed(seqs, weights)
    assert got_seqs.tolist() == want_seqs.tolist()
    assert got.tobytes() == want.tobytes()


def test_both_ways_of_summing_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seqs close together are counted into slots; far apart, sorted."""
    sorts: list[int] = []
    real = np.unique

    def unique(*args: Any, **kwargs: Any) -> Any:
        sorts.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "unique", unique)
    summed(np.array([3, 1, 3, 2]), np.ones(4))
    assert sorts == []
    summed(np.array([0, 10**9]), np.ones(2))
    assert sorts == [1]
