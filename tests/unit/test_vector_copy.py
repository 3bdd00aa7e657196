"""The in-process copy of a project's vectors: its top-k (ties by path and line, as the
database's scan orders them) and the parsing of the binary rows it is read from."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import Copy, parse


def _copy(vectors: list[list[float]], ranks: list[int]) -> Copy:
    values = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(values, axis=1)
    unit = values / np.where(norms > 0, norms, 1.0)[:, None]
    seqs = np.arange(10, 10 + len(vectors), dtype=np.int64)
    return Copy(1, 2, seqs, unit.astype(np.float32), np.asarray(ranks, dtype=np.int64))


def test_top_orders_by_similarity_then_path_and_line() -> None:
    # Rows 0 and 2 point the same way (a tie): rank (path, line) decides; row 3 is zero.
    copy = _copy([[1, 0], [0, 1], [2, 0], [0, 0], [1, 1]], ranks=[5, 1, 2, 3, 4])
    seqs, scores = copy.top(np.array([3.0, 0.0]), 3)
    assert seqs == [12, 10, 14]
    assert scores == pytest.approx([1.0, 1.0, 2**-0.5], abs=1e-6)
    seqs, scores = copy.top(np.array([3.0, 0.0]), 10)  # more than held: every row
    assert seqs == [12, 10, 14, 11, 13] and scores[-1] == 0.0
    assert copy.top(np.array([1.0, 0.0]), 0) == ([], [])


def test_top_is_the_exact_top_k_of_a_large_copy() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 16)).tolist()
    copy = _copy(vectors, list(range(500)))
    query = rng.normal(size=16)
    seqs, scores = copy.top(query, 25)
    unit = copy.unit @ (query / np.linalg.norm(query))
    want = np.argsort(-unit, kind="stable")[:25]
    assert seqs == (want + 10).tolist()
    assert scores == pytest.approx(unit[want].tolist(), abs=1e-6)


def _row(values: list[list[float]], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    dim = len(values[0])
    data = b"".join(struct.pack(">hh", dim, 0) + struct.pack(f">{dim}f", *v) for v in values)
    row: dict[str, Any] = {
        "generation": 4,
        "epoch": 77,
        "n_vectors": len(values),
        "dimension": str(dim),
        "seqs": b"".join(struct.pack(">q", 100 + i) for i in range(len(values))),
        "ranks": b"".join(struct.pack(">q", len(values) - i) for i in range(len(values))),
        "vectors": data,
    }
    row.update(overrides or {})
    return row


def test_parse_reads_pgvector_binary_rows() -> None:
    copy = parse(_row([[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]]))
    assert copy is not None
    assert (copy.generation, copy.epoch, copy.dimension) == (4, 77, 2)
    assert copy.seqs.tolist() == [100, 101, 102] and copy.ranks.tolist() == [3, 2, 1]
    assert copy.unit.ravel().tolist() == pytest.approx([0.6, 0.8, 0.0, 0.0, 0.0, -1.0])


@pytest.mark.parametrize(
    "overrides",
    [
        {"vectors": None},  # no vectors
        {"dimension": None},
        {"n_vectors": 3},  # the counter and the rows disagree
        {"dimension": "3"},  # rows of another size than the column's
    ],
)
def test_parse_refuses_what_does_not_add_up(overrides: dict[str, Any]) -> None:
    assert parse(_row([[1.0, 2.0], [3.0, 4.0]], overrides)) is None


def test_parse_checks_each_vector_header() -> None:
    row = _row([[1.0, 2.0], [3.0, 4.0]])
    data = bytearray(row["vectors"])
    data[12:14] = struct.pack(">h", 9)  # the second vector's dimension
    assert parse({**row, "vectors": bytes(data)}) is None
