"""The binary COPY encoding of postings blocks, read back by a real PostgreSQL."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres import PgDatabase, postings

INT64 = st.integers(-(2**63), 2**63 - 1)
# (term, chunk, tf, doc_len, group): a group (file) holds a range of chunks, as a store writes.
POSTINGS = st.lists(
    st.tuples(
        st.sampled_from([-(2**63), -1, 0, 7, 2**63 - 1]) | INT64,
        st.integers(1, 40),
        st.integers(1, 2**31 - 1),
        st.integers(0, 2**31 - 1),
    ),
    max_size=300,
    unique_by=lambda p: (p[0], p[1]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=POSTINGS, per_group=st.integers(1, 12))
async def test_blocks_read_back_as_the_postings_they_hold(
    pg_url: str, tmp_path: Path, rows: list[tuple[int, int, int, int]], per_group: int
) -> None:
    columns = list(zip(*rows, strict=True)) or [(), (), (), ()]
    terms, chunks, tfs, lens = (np.array(c, dtype=np.int64) for c in columns)
    groups = chunks // per_group
    data, n_blocks = postings.binary_blocks(
        terms, chunks, tfs.astype(np.int32), lens.astype(np.int32), groups
    )
    db = PgDatabase(pg_url, data_dir=tmp_path)
    try:
        async with db.connection() as conn, conn.transaction():
            await conn.execute(
                "CREATE TEMP TABLE b (term int8, first int8, n int4, chunks int8[], "
                "tfs int4[], doc_lens int4[]) ON COMMIT DROP"
            )
            await conn.copy_to_table(
                "b", source=io.BytesIO(data), columns=list(postings.COLUMNS), format="binary"
            )
            blocks = await conn.fetch("SELECT * FROM b")
    finally:
        await db.close()
    assert len(blocks) == n_blocks == len({(t, c // per_group) for t, c, _, _ in rows})
    got = []
    for b in blocks:
        assert b["n"] == len(b["chunks"]) == len(b["tfs"]) == len(b["doc_lens"]) > 0
        assert b["first"] == b["chunks"][0] and list(b["chunks"]) == sorted(b["chunks"])
        assert len({c // per_group for c in b["chunks"]}) == 1  # one group a block
        got += zip([b["term"]] * b["n"], b["chunks"], b["tfs"], b["doc_lens"], strict=True)
    assert sorted(got) == sorted(rows)
    assert [b["term"] for b in blocks] == sorted(b["term"] for b in blocks)  # in term order
