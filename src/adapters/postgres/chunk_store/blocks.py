"""A ``lexical_search.BLOCKS`` row decoded: every posting of the query's terms, with its
chunk and its BM25 contribution (``lexical.term_score``, element by element in float64).
What a search sums per chunk, and what ``postings_cache`` keeps per term."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np

from codebase_mcp_search.core import lexical

# A one-dimensional array in PostgreSQL's binary format: a 20-byte header (dimensions, flags,
# element type, length, lower bound), then each element as a 4-byte length and its value.
_ARRAY_HEADER = 20


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


def decoded(row: asyncpg.Record | None) -> Postings | None:
    """The postings of a ``BLOCKS`` row; None when no block matched."""
    if row is None or row["terms"] is None:
        return None
    n_docs, total_len = int(row["n_docs"]), int(row["total_len"])
    avg = total_len / n_docs if n_docs > 0 else 0.0
    idf_of = {
        int(t): lexical.idf(n_docs, int(df))
        for t, df in zip(row["w_terms"], row["w_dfs"], strict=True)
    }
    terms = np.asarray([int(t) for t in row["terms"]], dtype=np.int64)
    sizes = np.asarray(row["sizes"], dtype=np.int64)
    chunks = elements(row["chunks"], sizes, ">i8")
    tfs = elements(row["tfs"], sizes, ">i4").astype(np.float64)
    lens = elements(row["doc_lens"], sizes, ">i4").astype(np.float64)
    idfs = np.repeat(np.array([idf_of[int(t)] for t in terms]), sizes)
    ratio = lens / avg if avg > 0 else np.ones_like(lens)
    norm = lexical.K1 * (1.0 - lexical.B + lexical.B * ratio)
    contrib = idfs * (tfs * (lexical.K1 + 1.0)) / (tfs + norm)
    return Postings(terms, sizes, chunks, contrib, idf_of, int(row["epoch"]))


def elements(data: bytes, sizes: np.ndarray[Any, Any], kind: str) -> np.ndarray[Any, Any]:
    """The elements of one-dimensional arrays of ``sizes`` elements of ``kind`` (a big-endian
    numpy type), concatenated in PostgreSQL's binary format, as int64."""
    item = np.dtype([("len", ">i4"), ("value", kind)])
    expected = int(len(sizes) * _ARRAY_HEADER + sizes.sum() * item.itemsize)
    if len(data) != expected:
        raise ValueError(f"postings arrays: {len(data)} bytes where {expected} were expected")
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(_ARRAY_HEADER + sizes[:-1] * item.itemsize, out=starts[1:])
    at_head = starts[:, None] + np.arange(_ARRAY_HEADER)
    # Each header says one dimension of its block's size (a total that matched by chance
    # would strip the headers at the wrong places).
    head = raw[at_head].view(">i4")
    if not (np.all(head[:, 0] == 1) and np.array_equal(head[:, 3], sizes)):
        raise ValueError("postings arrays: a block's header does not match its size")
    keep = np.ones(len(raw), dtype=bool)
    keep[at_head.ravel()] = False
    return raw[keep].view(item)["value"].astype(np.int64)
