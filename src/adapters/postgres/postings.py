"""BM25 postings stored in blocks: one row per (term, file) holding the file's chunks that
contain the term, with their term frequencies and document lengths (the store splits a file
whose chunks differ in language, so a block's chunks pass or fail every search filter alike).

A file's chunks are written (and deleted) together, so a block never changes: it is copied in
with its file and deleted with it, keyed by (term, first chunk). Against one row per (term,
chunk), a load inserts several times fewer index entries, one per (term, file) (maintaining
the postings index was most of the database's work in a large first index), for the same BM25.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_INT8_OID = 20
_INT4_OID = 23

# PostgreSQL's binary COPY format: a header, then per row a field count and each field as its
# byte length and big-endian value; an array field is a header (dimensions, null flag, element
# type, length and lower bound of its one dimension), then each element as length and value.
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags 0, no extension
COPY_TRAILER = b"\xff\xff"
COLUMNS = ("term", "first", "n", "chunks", "tfs", "doc_lens")
_ARRAY_HEAD = [
    ("len", ">i4"),
    ("ndim", ">i4"),
    ("hasnull", ">i4"),
    ("oid", ">i4"),
    ("dim", ">i4"),
    ("lbound", ">i4"),
]
# A row up to its first array's elements: term, first chunk, n, and the chunks array header.
_HEAD = np.dtype(
    [
        ("fields", ">i2"),
        ("term_len", ">i4"),
        ("term", ">i8"),
        ("first_len", ">i4"),
        ("first", ">i8"),
        ("n_len", ">i4"),
        ("n", ">i4"),
        *[(f"a_{name}", kind) for name, kind in _ARRAY_HEAD],
    ]
)
_ARRAY = np.dtype(_ARRAY_HEAD)
_INT8_ITEM = np.dtype([("len", ">i4"), ("value", ">i8")])
_INT4_ITEM = np.dtype([("len", ">i4"), ("value", ">i4")])
# Bytes of a block row of n chunks past its fixed part.
_PER_CHUNK = _INT8_ITEM.itemsize + 2 * _INT4_ITEM.itemsize
_FIXED = _HEAD.itemsize + 2 * _ARRAY.itemsize


def binary_blocks(
    terms: np.ndarray[Any, Any],
    chunks: np.ndarray[Any, Any],
    tfs: np.ndarray[Any, Any],
    doc_lens: np.ndarray[Any, Any],
    files: np.ndarray[Any, Any],
) -> tuple[bytes, int]:
    """Binary COPY data (``COLUMNS``) of the blocks of these postings, one per (term, file) in
    term order (the postings index then fills page by page), chunks ascending within a block;
    and the number of blocks. ``files`` tells postings of different files (groups) apart."""
    order = np.lexsort((chunks, files, terms))
    terms, chunks, files = terms[order], chunks[order], files[order]
    tfs, doc_lens = tfs[order], doc_lens[order]
    n_post = len(terms)
    if n_post == 0:
        return COPY_HEADER + COPY_TRAILER, 0
    new = np.empty(n_post, dtype=bool)
    new[0] = True
    np.not_equal(terms[1:], terms[:-1], out=new[1:])
    new[1:] |= files[1:] != files[:-1]
    starts = np.flatnonzero(new)
    n_blocks = len(starts)
    sizes = np.diff(np.append(starts, n_post))
    row_size = _FIXED + _PER_CHUNK * sizes
    # Rows, fields and elements all have even sizes: written as 16-bit units, from offset 0
    # (the header has an odd size, so it is prepended after).
    row_at = np.zeros(n_blocks, dtype=np.int64)
    np.cumsum(row_size[:-1], out=row_at[1:])
    out = np.empty(int(row_size.sum()) // 2, dtype=np.uint16)

    head = np.empty(n_blocks, dtype=_HEAD)
    head["fields"] = len(COLUMNS)
    head["term_len"] = 8
    head["term"] = terms[starts]
    head["first_len"] = 8
    head["first"] = chunks[starts]
    head["n_len"] = 4
    head["n"] = sizes
    _array_head(head, "a_", sizes, _INT8_OID, _INT8_ITEM.itemsize)
    _put(out, row_at, head)
    # Where each posting sits in its block, and where its block's arrays start.
    block = np.repeat(np.arange(n_blocks), sizes)
    rank = np.arange(n_post) - starts[block]
    at = row_at + _HEAD.itemsize
    _put(out, at[block] + rank * _INT8_ITEM.itemsize, _items(_INT8_ITEM, chunks))
    at = at + sizes * _INT8_ITEM.itemsize
    for values in (tfs, doc_lens):
        arrays = np.empty(n_blocks, dtype=_ARRAY)
        _array_head(arrays, "", sizes, _INT4_OID, _INT4_ITEM.itemsize)
        _put(out, at, arrays)
        at = at + _ARRAY.itemsize
        _put(out, at[block] + rank * _INT4_ITEM.itemsize, _items(_INT4_ITEM, values))
        at = at + sizes * _INT4_ITEM.itemsize
    return COPY_HEADER + out.tobytes() + COPY_TRAILER, n_blocks


def _array_head(
    rows: np.ndarray[Any, Any], prefix: str, sizes: np.ndarray[Any, Any], oid: int, item: int
) -> None:
    rows[f"{prefix}len"] = _ARRAY.itemsize - 4 + item * sizes
    rows[f"{prefix}ndim"] = 1
    rows[f"{prefix}hasnull"] = 0
    rows[f"{prefix}oid"] = oid
    rows[f"{prefix}dim"] = sizes
    rows[f"{prefix}lbound"] = 1


def _items(dtype: np.dtype[Any], values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    items = np.empty(len(values), dtype=dtype)
    items["len"] = dtype.itemsize - 4
    items["value"] = values
    return items


def _put(
    out: np.ndarray[Any, Any], at: np.ndarray[Any, Any], records: np.ndarray[Any, Any]
) -> None:
    """Write each record's bytes at its (even) byte offset in ``at`` of the 16-bit ``out``."""
    width = records.dtype.itemsize // 2
    out[(at // 2)[:, None] + np.arange(width)] = records.view(np.uint16).reshape(-1, width)
