"""A ``terms_read.TERMS`` row's blocks decoded: every posting of the query's terms, with its
chunk and its BM25 contribution (``lexical.term_score``, element by element in float64).
What a search sums per chunk, and what ``postings_cache`` keeps per term.

``plain`` does the same in plain Python, for a small row in a process that has not loaded numpy
(a search from the CLI): importing numpy (0.1-0.15 s of CPU) would be most of that search's
time. Both give the same floats, operation by operation (``tests/unit/test_postgres_blocks.py``).
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from codebase_mcp_search.core import lexical

if TYPE_CHECKING:
    import numpy as np

# A one-dimensional array in PostgreSQL's binary format: a 20-byte header (dimensions, flags,
# element type, length, lower bound), then each element as a 4-byte length and its value.
_ARRAY_HEADER = 20
# ``summed`` counts into one slot per seq between the least and the greatest when that span is
# at most this many times the postings (plus ``DENSE_SLACK``): a pass over the postings and
# one over the span, against sorting the postings (np.unique), ten times the time at a
# million postings. Past it (seqs far apart: few postings in a large project) it sorts.
DENSE_SPAN = 8
DENSE_SLACK = 4096
_HEADER = struct.Struct(">5i")  # dimensions, null flag, element type, length, lower bound
# Up to this many postings a row is decoded in plain Python when numpy is not loaded yet
# (``plain_row``): a few milliseconds, against numpy's import.
PLAIN_POSTINGS = 20_000


@dataclass(frozen=True, slots=True)
class Postings:
    """The postings of a row's blocks, in the row's order: block ``i`` holds ``sizes[i]``
    postings of the term ``terms[i]``."""

    terms: np.ndarray[Any, Any]
    sizes: np.ndarray[Any, Any]
    chunks: np.ndarray[Any, Any]
    contrib: np.ndarray[Any, Any]
    idf_of: dict[int, float]
    epoch: int


def statistics(row: asyncpg.Record) -> tuple[float, dict[int, float]]:
    """A row's average chunk length and the idf of each query term it gives a document
    frequency for (``w_terms``)."""
    n_docs, total_len = int(row["n_docs"]), int(row["total_len"])
    avg = total_len / n_docs if n_docs > 0 else 0.0
    idf_of = {t: lexical.idf(n_docs, df) for t, df in document_frequencies(row).items()}
    return avg, idf_of


def document_frequencies(row: asyncpg.Record) -> dict[int, int]:
    """The project's document frequency of each query term a row gives one for
    (``w_terms``), in the row's order."""
    return {int(t): int(df) for t, df in zip(row["w_terms"] or (), row["w_dfs"] or (), strict=True)}


def contributions(
    tfs: np.ndarray[Any, Any], lens: np.ndarray[Any, Any], avg: float, idfs: Any
) -> np.ndarray[Any, Any]:
    """Each posting's BM25 contribution (``lexical.term_score``, element by element in
    float64) from its term frequency, its chunk's length and its term's idf (one for all, or
    one per posting): the one computation every reading of postings shares, so that they all
    give the same floats."""
    import numpy as np

    tf = tfs.astype(np.float64)
    length = lens.astype(np.float64)
    ratio = length / avg if avg > 0 else np.ones_like(length)
    norm = lexical.K1 * (1.0 - lexical.B + lexical.B * ratio)
    out: np.ndarray[Any, Any] = idfs * (tf * (lexical.K1 + 1.0)) / (tf + norm)
    return out


@dataclass(frozen=True, slots=True)
class Raw:
    """The postings of a row's blocks as stored, in the row's order: block ``i`` holds
    ``sizes[i]`` postings of the term ``terms[i]``."""

    terms: np.ndarray[Any, Any]
    sizes: np.ndarray[Any, Any]
    chunks: np.ndarray[Any, Any]
    tfs: np.ndarray[Any, Any]
    lens: np.ndarray[Any, Any]


def raw(row: asyncpg.Record) -> Raw | None:
    """The postings of a row's blocks (``chunks``, ``tfs``, ``doc_lens``); None without
    blocks."""
    import numpy as np

    if row["terms"] is None:
        return None
    # Per block, not per Python object: a common term has a block in most files.
    terms = np.asarray(row["terms"], dtype=np.int64)
    sizes = np.asarray(row["sizes"], dtype=np.int64)
    # Frequencies and lengths in 4 bytes, as stored: a term kept holds them (``terms.Term``).
    return Raw(
        terms,
        sizes,
        elements(row["chunks"], sizes, ">i8"),
        elements(row["tfs"], sizes, ">i4", wide=False),
        elements(row["doc_lens"], sizes, ">i4", wide=False),
    )


def decoded(row: asyncpg.Record | None) -> Postings | None:
    """The postings of a ``TERMS`` row's blocks; None when no block matched."""
    import numpy as np

    if row is None or row["terms"] is None:
        return None
    avg, idf_of = statistics(row)
    found = raw(row)
    assert found is not None
    known = np.asarray(sorted(idf_of), dtype=np.int64)
    idf_values = np.asarray([idf_of[int(t)] for t in known], dtype=np.float64)
    idfs = np.repeat(idf_values[np.searchsorted(known, found.terms)], found.sizes)
    contrib = contributions(found.tfs, found.lens, avg, idfs)
    return Postings(found.terms, found.sizes, found.chunks, contrib, idf_of, int(row["epoch"]))


def elements(
    data: bytes, sizes: np.ndarray[Any, Any], kind: str, *, wide: bool = True
) -> np.ndarray[Any, Any]:
    """The elements of one-dimensional arrays of ``sizes`` elements of ``kind`` (a big-endian
    numpy type), concatenated in PostgreSQL's binary format, as int64 (4-byte values as
    int32 unless ``wide``)."""
    import numpy as np

    item = np.dtype([("len", ">i4"), ("value", kind)])
    expected = int(len(sizes) * _ARRAY_HEADER + sizes.sum() * item.itemsize)
    if len(data) != expected:
        raise ValueError(f"postings arrays: {len(data)} bytes where {expected} were expected")
    # Headers and elements are whole 4-byte words: each value is read at its word's index
    # (gathered, where cutting the headers out of the bytes copied every byte twice).
    words = np.frombuffer(data, dtype=">i4")
    head_words, item_words = _ARRAY_HEADER // 4, item.itemsize // 4
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(head_words + sizes[:-1] * item_words, out=starts[1:])
    # Each header says one dimension of its block's size (a total that matched by chance
    # would strip the headers at the wrong places).
    head = words[starts[:, None] + np.arange(head_words)]
    if not (np.all(head[:, 0] == 1) and np.array_equal(head[:, 3], sizes)):
        raise ValueError("postings arrays: a block's header does not match its size")
    before = np.zeros(len(sizes), dtype=np.int64)  # the elements of the blocks before each
    np.cumsum(sizes[:-1], out=before[1:])
    # A block's first value word, less its rank times the item's words (added back below).
    first = starts + head_words + 1 - before * item_words
    at = np.repeat(first, sizes) + np.arange(int(sizes.sum()), dtype=np.int64) * item_words
    if item_words == 2:  # 4-byte values
        return words[at].astype(np.int64 if wide else np.int32)
    high = words[at].astype(np.int64)
    low = np.frombuffer(data, dtype=">u4")[at + 1].astype(np.int64)
    out: np.ndarray[Any, Any] = (high << 32) | low
    return out


def summed(
    seqs: np.ndarray[Any, Any], weights: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The distinct ``seqs`` ascending, and for each the sum of its ``weights`` added in the
    order they come (what ``np.unique`` then ``np.bincount`` give, to the last bit: both add
    a slot's weights one by one in array order, from 0.0)."""
    import numpy as np

    if len(seqs) == 0:
        return seqs.astype(np.int64), np.zeros(0, dtype=np.float64)
    lo, hi = int(seqs.min()), int(seqs.max())
    span = hi - lo + 1
    if span > DENSE_SPAN * len(seqs) + DENSE_SLACK:
        distinct, inverse = np.unique(seqs, return_inverse=True)
        return distinct, np.bincount(inverse, weights=weights, minlength=len(distinct))
    slot = seqs - lo if lo else seqs
    sums = np.bincount(slot, weights=weights, minlength=span)
    present = np.zeros(span, dtype=bool)
    present[slot] = True
    at = np.flatnonzero(present)
    return at + lo, sums[at]


def plain_row(row: asyncpg.Record | None) -> bool:
    """Whether ``row`` is decoded with ``plain`` rather than numpy: a small one, in a process
    that has not loaded numpy (one that has pays nothing more for it), or one without
    postings."""
    if "numpy" in sys.modules:
        return False
    return row is None or row["postings"] is None or int(row["postings"]) <= PLAIN_POSTINGS


@dataclass(frozen=True, slots=True)
class PlainPostings:
    """``Postings`` in lists: each posting's chunk and BM25 contribution, in the row's order."""

    chunks: list[int]
    contrib: list[float]
    idf_of: dict[int, float]
    epoch: int


def plain(row: asyncpg.Record | None) -> PlainPostings | None:
    """``decoded`` in plain Python: the same contributions, computed in the same order of
    operations on the same doubles."""
    if row is None or row["terms"] is None:
        return None
    avg, idf_of = statistics(row)
    terms = [int(t) for t in row["terms"]]
    sizes = [int(n) for n in row["sizes"]]
    chunks = plain_elements(row["chunks"], sizes, "q")
    tfs = plain_elements(row["tfs"], sizes, "i")
    lens = plain_elements(row["doc_lens"], sizes, "i")
    k1, b = lexical.K1, lexical.B
    contrib: list[float] = []
    at = 0
    for term, size in zip(terms, sizes, strict=True):
        idf = idf_of[term]
        for i in range(at, at + size):
            tf = float(tfs[i])
            ratio = float(lens[i]) / avg if avg > 0 else 1.0
            norm = k1 * (1.0 - b + b * ratio)
            contrib.append(idf * (tf * (k1 + 1.0)) / (tf + norm))
        at += size
    return PlainPostings(chunks, contrib, idf_of, int(row["epoch"]))


def plain_elements(data: bytes, sizes: list[int], kind: str) -> list[int]:
    """``elements`` in plain Python (``kind``: ``q`` for 8-byte, ``i`` for 4-byte integers)."""
    width = struct.calcsize(">" + kind)
    expected = len(sizes) * _ARRAY_HEADER + sum(sizes) * (4 + width)
    if len(data) != expected:
        raise ValueError(f"postings arrays: {len(data)} bytes where {expected} were expected")
    out: list[int] = []
    at = 0
    for size in sizes:
        dims, _, _, length, _ = _HEADER.unpack_from(data, at)
        if dims != 1 or length != size:
            raise ValueError("postings arrays: a block's header does not match its size")
        # Each element: its length (4 bytes, skipped), then its value.
        out.extend(struct.unpack_from(">" + ("4x" + kind) * size, data, at + _ARRAY_HEADER))
        at += _ARRAY_HEADER + size * (4 + width)
    return out
