"""The Postgres store's reading of postings blocks sent as concatenated binary arrays."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import elements

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
