"""One term's postings packed into one value: its chunks ascending and each one's term
frequency, a byte or two a posting (``pack``, ``unpack``); and the document lengths of the
chunks of a build's packed terms, in one value (``pack_lengths``, ``unpack_lengths``).

A common term of a large project has a postings block in most of its files: read from the
blocks, it costs a heap tuple and three array headers per file and ~28 bytes a posting on the
wire. Packed, the chunks are a bitmap over their span when they are dense (a bit a chunk of
the span, at least one chunk in 16), else the gaps between them in 2, 4 or 8 bytes, whichever
is smallest; frequencies take the fewest bytes (1, 2 or 4) their largest value fits. A term
in every chunk of a million is then ~1.1 MB, one detoasted value. A chunk's length is the
same in every term: the build keeps one per chunk, by seq, beside the terms.

Layout (little-endian): a header (``_HEADER``: format version, chunk encoding, frequency
width, number of postings, first chunk, bytes of the chunk section), the chunk section, the
frequencies. Lengths: a header (``_LENGTHS``: version, width, first seq, span), then one
length per seq of the span (0 for a seq without one).
"""

from __future__ import annotations

import struct
from typing import Any, Final

import numpy as np

VERSION: Final = 1
_HEADER = struct.Struct("<BBBIqI")
_LENGTHS = struct.Struct("<BBqq")
BITMAP: Final = 0
GAPS_2: Final = 1
GAPS_4: Final = 2
SEQS_8: Final = 3
_GAP_TYPES: dict[int, np.dtype[Any]] = {
    GAPS_2: np.dtype("<u2"),
    GAPS_4: np.dtype("<u4"),
    SEQS_8: np.dtype("<i8"),
}
_WIDTH_TYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("<u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
}


def _width(values: np.ndarray[Any, Any]) -> int:
    top = int(values.max()) if len(values) else 0
    if int(values.min() if len(values) else 0) < 0 or top >= 2**32:
        raise ValueError(f"packed postings hold counts from 0 to 2**32 - 1, not {top}")
    return 1 if top < 2**8 else 2 if top < 2**16 else 4


def pack(seqs: np.ndarray[Any, Any], tfs: np.ndarray[Any, Any]) -> bytes:
    """The packed value of one term's postings: ``seqs`` ascending and distinct (at least
    one), and each one's term frequency."""
    seqs = np.asarray(seqs, dtype=np.int64)
    n = len(seqs)
    if n == 0 or len(tfs) != n:
        raise ValueError("packed postings: one frequency per chunk, and a chunk")
    gaps = np.diff(seqs)
    if n > 1 and int(gaps.min()) <= 0:
        raise ValueError("packed postings: chunks ascending and distinct")
    base = int(seqs[0])
    span = int(seqs[-1]) - base + 1
    top_gap = int(gaps.max()) if n > 1 else 0
    # The smallest encoding (the first of equal sizes): bits over the span, or the gaps.
    sizes = [((span + 7) // 8, BITMAP)]
    if top_gap < 2**16:
        sizes.append((2 * n, GAPS_2))
    if top_gap < 2**32:
        sizes.append((4 * n, GAPS_4))
    sizes.append((8 * n, SEQS_8))
    kind = min(sizes, key=lambda s: s[0])[1]
    if kind == BITMAP:
        bits = np.zeros(span, dtype=bool)
        bits[seqs - base] = True
        chunks = np.packbits(bits, bitorder="little").tobytes()
    elif kind == SEQS_8:
        chunks = seqs.astype("<i8").tobytes()
    else:
        chunks = np.concatenate([[0], gaps]).astype(_GAP_TYPES[kind]).tobytes()
    tf_w = _width(np.asarray(tfs))
    return b"".join(
        (
            _HEADER.pack(VERSION, kind, tf_w, n, base, len(chunks)),
            chunks,
            np.asarray(tfs).astype(_WIDTH_TYPES[tf_w]).tobytes(),
        )
    )


def unpack(data: bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The (chunks as int64, term frequencies) of a ``pack``ed value, chunks ascending;
    frequencies as unsigned integers of their stored width."""
    if len(data) < _HEADER.size:
        raise ValueError("packed postings: shorter than their header")
    version, kind, tf_w, n, base, chunk_bytes = _HEADER.unpack_from(data)
    if version != VERSION or tf_w not in _WIDTH_TYPES:
        raise ValueError(f"packed postings: unknown format {(version, tf_w)}")
    at = _HEADER.size
    if len(data) != at + chunk_bytes + n * tf_w:
        raise ValueError("packed postings: the sections do not add up to the value's size")
    if kind == BITMAP:
        bits = np.unpackbits(
            np.frombuffer(data, dtype=np.uint8, count=chunk_bytes, offset=at), bitorder="little"
        )
        seqs = np.flatnonzero(bits)
        if len(seqs) != n:
            raise ValueError("packed postings: the bitmap does not hold their number of chunks")
        seqs += base
    elif kind in _GAP_TYPES:
        dtype = _GAP_TYPES[kind]
        if chunk_bytes != n * dtype.itemsize:
            raise ValueError("packed postings: the chunk section does not hold one per posting")
        values = np.frombuffer(data, dtype=dtype, count=n, offset=at)
        if kind == SEQS_8:
            seqs = values.astype(np.int64)
        else:
            seqs = np.cumsum(values, dtype=np.int64)
            seqs += base
    else:
        raise ValueError(f"packed postings: unknown chunk encoding {kind}")
    tfs = np.frombuffer(data, dtype=_WIDTH_TYPES[tf_w], count=n, offset=at + chunk_bytes)
    return seqs, tfs


def pack_lengths(seqs: np.ndarray[Any, Any], lens: np.ndarray[Any, Any]) -> bytes:
    """The lengths ``lens`` of the chunks ``seqs`` (any order, each once), by seq."""
    seqs = np.asarray(seqs, dtype=np.int64)
    if len(seqs) == 0:
        return _LENGTHS.pack(VERSION, 1, 0, 0)
    lo = int(seqs.min())
    span = int(seqs.max()) - lo + 1
    width = _width(np.asarray(lens))
    dense = np.zeros(span, dtype=_WIDTH_TYPES[width])
    dense[seqs - lo] = lens
    return _LENGTHS.pack(VERSION, width, lo, span) + dense.tobytes()


def unpack_lengths(data: bytes) -> tuple[int, np.ndarray[Any, Any]]:
    """The first seq and the lengths by seq from it of a ``pack_lengths`` value."""
    if len(data) < _LENGTHS.size:
        raise ValueError("packed lengths: shorter than their header")
    version, width, lo, span = _LENGTHS.unpack_from(data)
    if version != VERSION or width not in _WIDTH_TYPES:
        raise ValueError(f"packed lengths: unknown format {(version, width)}")
    if len(data) != _LENGTHS.size + span * width:
        raise ValueError("packed lengths: not one length per seq of their span")
    return lo, np.frombuffer(data, dtype=_WIDTH_TYPES[width], count=span, offset=_LENGTHS.size)
