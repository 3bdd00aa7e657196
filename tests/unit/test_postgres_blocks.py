"""The Postgres store's reading of postings blocks sent as concatenated binary arrays, with
numpy and in plain Python, and the summing of their contributions per chunk."""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import (
    PLAIN_POSTINGS,
    elements,
    plain_elements,
    plain_row,
    summed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import candidates, score

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


# --- the same in plain Python (a small row in a process without numpy: a CLI search) --------


@st.composite
def blocks_rows(draw: st.DrawFn) -> dict[str, object]:
    """A ``BLOCKS`` row: a few terms, each with blocks of chunks (overlapping across terms),
    with the project's statistics (an empty corpus's average length included)."""
    n_docs = draw(st.integers(0, 1000))
    total_len = draw(st.integers(0, 200_000)) if n_docs else 0
    keys = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=4, unique=True))
    terms, sizes, chunks, tfs, lens = [], [], [], [], []
    for key in keys:
        for _ in range(draw(st.integers(1, 3))):
            seqs = sorted(draw(st.sets(st.integers(0, 40), min_size=1, max_size=6)))
            terms.append(key)
            sizes.append(len(seqs))
            chunks.append(seqs)
            tfs.append([draw(st.integers(1, 50)) for _ in seqs])
            lens.append([draw(st.integers(1, 3000)) for _ in seqs])
    return {
        "n_docs": n_docs,
        "total_len": total_len,
        "generation": 1,
        "epoch": draw(st.integers(1, 2**31)),
        "w_terms": sorted(keys),
        "w_dfs": [draw(st.integers(1, max(1, n_docs))) for _ in keys],
        "terms": terms,
        "sizes": sizes,
        "postings": sum(sizes),
        "chunks": b"".join(_array(b, INT8_OID, 8) for b in chunks),
        "tfs": b"".join(_array(b, INT4_OID, 4) for b in tfs),
        "doc_lens": b"".join(_array(b, INT4_OID, 4) for b in lens),
    }


@settings(max_examples=300, deadline=None)
@given(blocks_rows())
def test_plain_python_scores_as_numpy_does_to_the_last_bit(row: dict[str, object]) -> None:
    by_numpy = score(row, plain=False)
    by_python = score(row, plain=True)
    assert by_numpy is not None and by_python is not None
    assert list(by_python.seqs) == np.asarray(by_numpy.seqs).tolist()
    assert list(by_python.raw) == np.asarray(by_numpy.raw).tolist()  # equal floats, not close
    assert (by_python.bound, by_python.epoch) == (by_numpy.bound, by_numpy.epoch)
    for k in range(1, len(by_numpy.seqs) + 1):
        assert candidates(by_python, k) == candidates(by_numpy, k)


def test_plain_python_reads_the_blocks_and_refuses_what_numpy_refuses() -> None:
    blocks = [[5, 9, 2**40], [7], [1, 2]]
    data = b"".join(_array(b, INT8_OID, 8) for b in blocks)
    assert plain_elements(data, [3, 1, 2], "q") == [v for b in blocks for v in b]
    for sizes in ([3, 1, 3], [2, 2, 2]):
        with pytest.raises(ValueError, match="postings arrays"):
            plain_elements(data, sizes, "q")


def test_a_row_without_blocks_scores_nothing_either_way() -> None:
    empty = {"terms": None, "postings": None}
    assert score(empty, plain=True) is None and score(empty, plain=False) is None
    assert score(None, plain=True) is None


def test_only_a_small_row_in_a_process_without_numpy_is_decoded_in_plain_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small, large = {"postings": PLAIN_POSTINGS}, {"postings": PLAIN_POSTINGS + 1}
    assert not plain_row(small)  # numpy is loaded here
    monkeypatch.delitem(sys.modules, "numpy")
    assert plain_row(small) and plain_row(None) and not plain_row(large)
