"""The rows a Postgres write copies in, built without a database: file and chunk records, the
postings blocks (decoded from their binary COPY data), and chunks read back."""

from __future__ import annotations

import dataclasses
import struct
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres import postings
from codebase_mcp_search.adapters.postgres.chunk_store.rows import (
    CHUNK_COLUMNS,
    FILE_COLUMNS,
    SELECT_CHUNK,
    build_rows,
    chunk_of,
    term_key,
)
from codebase_mcp_search.core import lexical
from tests.factories import FileBatch, file_batch

WORDS = ["parse", "config", "token", "retry", "server", "cache", "alpha", "omega"]


def _decode_blocks(data: bytes) -> list[dict[str, Any]]:
    """The rows of binary COPY data in ``postings.COLUMNS``, read with the format's spec."""
    assert data.startswith(postings.COPY_HEADER) and data.endswith(postings.COPY_TRAILER)
    at = len(postings.COPY_HEADER)

    def take(fmt: str) -> Any:
        nonlocal at
        (value,) = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return value

    def array() -> list[int]:
        take(">i")  # byte length
        ndim, hasnull, oid, dim, lbound = (take(">i") for _ in range(5))
        assert (ndim, hasnull, lbound) == (1, 0, 1)
        fmt = ">q" if oid == 20 else ">i"
        items = []
        for _ in range(dim):
            assert take(">i") == struct.calcsize(fmt)
            items.append(take(fmt))
        return items

    blocks = []
    while (fields := take(">h")) != -1:
        assert fields == len(postings.COLUMNS)
        row: dict[str, Any] = {}
        for name, fmt in (("term", ">q"), ("first", ">q"), ("n", ">i")):
            assert take(">i") == struct.calcsize(fmt)
            row[name] = take(fmt)
        for name in ("chunks", "tfs", "doc_lens"):
            row[name] = array()
        blocks.append(row)
    assert at == len(data)
    return blocks


def _files() -> list[FileBatch]:
    """Three files; the markdown one holds a python chunk (a chunker may tell them apart)."""
    guide = file_batch(
        "r1",
        "docs/guide.md",
        ["# Parse the config", "def parse_config(path):\n    return path", "parse it twice"],
    )
    chunks = list(guide.chunks)
    chunks[1] = chunks[1].model_copy(update={"language": "python"})
    return [
        file_batch("r1", "pkg/a.py", ["def parse(x):\n    return x", "def retry(): parse()"]),
        dataclasses.replace(guide, chunks=chunks),
        file_batch("r1", "pkg/b.py", ["def parse_token(t):\n    return t  # parse"]),
    ]


def test_one_record_per_file_and_chunk_numbered_by_the_given_seqs() -> None:
    files = _files()
    seqs = [101, 102, 205, 206, 207, 300]
    rows = build_rows("r1", files, seqs)
    assert [r[FILE_COLUMNS.index("path")] for r in rows.files] == [f.file.path for f in files]
    assert all(len(r) == len(FILE_COLUMNS) for r in rows.files)
    assert {r[FILE_COLUMNS.index("body")] for r in rows.files} == {f.text for f in files}
    assert all(len(r) == len(CHUNK_COLUMNS) for r in rows.chunks)
    col = {name: i for i, name in enumerate(CHUNK_COLUMNS)}
    chunks = [c for f in files for c in f.chunks]
    assert [r[col["seq"]] for r in rows.chunks] == seqs
    assert [r[col["id"]] for r in rows.chunks] == [c.id for c in chunks]
    assert [r[col["file_ext"]] for r in rows.chunks] == ["py", "py", "md", "md", "md", "py"]
    assert [r[col["language"]] for r in rows.chunks] == [c.language for c in chunks]


def test_terms_and_document_lengths_are_the_chunks_bm25_documents() -> None:
    files = _files()
    rows = build_rows("r1", files, list(range(1, 7)))
    col = {name: i for i, name in enumerate(CHUNK_COLUMNS)}
    chunks = [c for f in files for c in f.chunks]
    for row, chunk in zip(rows.chunks, chunks, strict=True):
        doc = lexical.document_terms(chunk.content, chunk.file_path, chunk.symbol)
        assert row[col["doc_len"]] == sum(doc.values())
        assert row[col["terms"]] == [term_key(t) for t in doc]
        assert len(set(row[col["terms"]])) == len(doc)  # no two terms share a key here
    assert rows.n_docs == len(chunks)
    assert rows.total_len == sum(r[col["doc_len"]] for r in rows.chunks)


def test_vectors_become_float32_of_one_dimension_or_none() -> None:
    with_vectors = file_batch("r1", "a.py", ["def a(): ...", "def b(): ..."], [[0.5, 1], [1, 0]])
    rows = build_rows("r1", [with_vectors], [1, 2])
    vectors = [r[CHUNK_COLUMNS.index("embedding")] for r in rows.chunks]
    assert rows.dimension == 2
    assert all(v.dtype == np.float32 and v.shape == (2,) for v in vectors)
    assert vectors[0].tolist() == [0.5, 1.0]
    without = build_rows("r1", _files(), list(range(1, 7)))
    assert without.dimension is None
    assert all(r[CHUNK_COLUMNS.index("embedding")] is None for r in without.chunks)


def test_no_files_give_empty_rows_and_an_empty_copy() -> None:
    rows = build_rows("r1", [], [])
    assert (rows.files, rows.chunks, rows.n_docs, rows.total_len) == ([], [], 0, 0)
    assert _decode_blocks(rows.postings) == []


@settings(max_examples=40, deadline=None)
@given(
    files=st.lists(
        st.tuples(
            st.sampled_from(["a.py", "b.py", "docs/c.md"]),
            st.lists(
                st.tuples(
                    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
                    st.sampled_from([None, "python", "markdown"]),
                ),
                min_size=1,
                max_size=4,
            ),
        ),
        max_size=4,
        unique_by=lambda f: f[0],
    )
)
def test_postings_blocks_hold_every_posting_once_in_one_file_and_language(
    files: list[tuple[str, list[tuple[list[str], str | None]]]],
) -> None:
    batches = []
    for path, pieces in files:
        batch = file_batch("r1", path, [" ".join(words) for words, _ in pieces])
        chunks = [
            c.model_copy(update={"language": lang})
            for c, (_, lang) in zip(batch.chunks, pieces, strict=True)
        ]
        batches.append(dataclasses.replace(batch, chunks=chunks))
    n = sum(len(b.chunks) for b in batches)
    seqs = list(range(10, 10 + 3 * n, 3))
    rows = build_rows("r1", batches, seqs)
    col = {name: i for i, name in enumerate(CHUNK_COLUMNS)}
    place = {r[col["seq"]]: (r[col["file_path"]], r[col["language"]]) for r in rows.chunks}
    expected: Counter[tuple[int, int, int, int]] = Counter()
    for row, chunk in zip(rows.chunks, [c for b in batches for c in b.chunks], strict=True):
        doc = lexical.document_terms(chunk.content, chunk.file_path, chunk.symbol)
        for term, tf in doc.items():
            expected[(term_key(term), row[col["seq"]], tf, row[col["doc_len"]])] += 1
    blocks = _decode_blocks(rows.postings)
    got: Counter[tuple[int, int, int, int]] = Counter()
    for b in blocks:
        assert b["n"] == len(b["chunks"]) == len(b["tfs"]) == len(b["doc_lens"]) > 0
        assert b["first"] == b["chunks"][0] == min(b["chunks"])
        assert b["chunks"] == sorted(b["chunks"])
        assert len({place[c] for c in b["chunks"]}) == 1  # one file and language a block
        for chunk, tf, length in zip(b["chunks"], b["tfs"], b["doc_lens"], strict=True):
            got[(b["term"], chunk, tf, length)] += 1
    assert got == expected
    # One block per (term, file, language): a file's deletion finds them by that key.
    assert len(blocks) == len({(k, place[s]) for k, s, _, _ in expected})
    assert [b["term"] for b in blocks] == sorted(b["term"] for b in blocks)


def test_a_chunk_row_reads_back_as_the_chunk_written() -> None:
    files = _files()
    rows = build_rows("r1", files, list(range(1, 7)))
    # (column, name it is selected as): "c.repo_id AS repository_id" -> (repo_id, ...).
    selected = [
        (column.removeprefix("c."), alias or column.removeprefix("c."))
        for column, _, alias in (n.strip().partition(" AS ") for n in SELECT_CHUNK.split(","))
    ]
    for record, chunk in zip(rows.chunks, [c for f in files for c in f.chunks], strict=True):
        row = {name: record[CHUNK_COLUMNS.index(column)] for column, name in selected}
        assert chunk_of(row) == chunk  # read by position: SELECT_CHUNK in the fields order


def test_term_keys_are_stable_signed_64_bit_integers() -> None:
    keys = {term_key(w) for w in WORDS}
    assert len(keys) == len(WORDS)
    assert all(-(2**63) <= k < 2**63 for k in keys)
    # Stored postings are keyed by these: a key must never change between versions.
    assert (term_key("parse"), term_key("config")) == (6495692958074113047, 1867751480269284804)
