"""Packed postings: a term's postings packed and unpacked are the same postings in every
encoding; a packed build corrected by the writes logged since gives each term exactly what
reading its blocks now gives (chunks, frequencies, lengths, idf, contributions to the last
bit); and when a build is due."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres import packed
from codebase_mcp_search.adapters.postgres.chunk_store.packing import PackConfig, due
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Lengths, terms_of
from codebase_mcp_search.adapters.postgres.packed import (
    pack,
    pack_lengths,
    unpack,
    unpack_lengths,
)
from tests.unit.test_postgres_blocks import INT4_OID, INT8_OID, _array


def _kind(data: bytes) -> int:
    return data[1]


@pytest.mark.parametrize(
    ("seqs", "kind"),
    [
        (list(range(1, 1001)), packed.BITMAP),  # dense: a bit a chunk of the span
        (list(range(5, 50_000, 97)), packed.GAPS_2),
        ([1, 70_000, 140_001], packed.GAPS_4),  # sparse: few postings far apart
        ([3], packed.BITMAP),
        ([1, 2**33, 2**40], packed.SEQS_8),
    ],
)
def test_each_encoding_reads_back_its_postings(seqs: list[int], kind: int) -> None:
    tfs = [(i % 300) + 1 for i in range(len(seqs))]
    data = pack(np.asarray(seqs), np.asarray(tfs))
    assert _kind(data) == kind
    got_seqs, got_tfs = unpack(data)
    assert got_seqs.tolist() == seqs and got_tfs.tolist() == tfs


@settings(max_examples=300, deadline=None)
@given(
    gaps=st.lists(
        st.one_of(st.integers(1, 3), st.integers(1, 70_000), st.integers(1, 2**34)),
        min_size=1,
        max_size=300,
    ),
    first=st.integers(1, 2**40),
    tfs=st.data(),
)
def test_any_postings_read_back(gaps: list[int], first: int, tfs: st.DataObject) -> None:
    seqs = np.cumsum([first, *gaps[1:]])
    freq = tfs.draw(
        st.lists(
            st.one_of(st.integers(1, 3), st.integers(1, 2**32 - 1)),
            min_size=len(seqs),
            max_size=len(seqs),
        )
    )
    got_seqs, got_tfs = unpack(pack(seqs, np.asarray(freq)))
    assert got_seqs.tolist() == seqs.tolist() and got_tfs.tolist() == freq


@pytest.mark.parametrize(
    ("seqs", "tfs", "message"),
    [([], [], "a chunk"), ([1, 2], [1], "one frequency"), ([2, 2], [1, 1], "ascending")],
)
def test_what_cannot_be_packed_is_refused(seqs: list[int], tfs: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pack(np.asarray(seqs, dtype=np.int64), np.asarray(tfs))


def test_a_damaged_value_is_refused() -> None:
    data = pack(np.arange(1, 100), np.ones(99, dtype=np.int64))
    with pytest.raises(ValueError, match="do not add up"):
        unpack(data[:-1])
    with pytest.raises(ValueError, match="unknown format"):
        unpack(bytes([9]) + data[1:])
    with pytest.raises(ValueError, match="shorter"):
        unpack(data[:4])


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(1, 5_000), st.integers(1, 70_000), min_size=1))
def test_lengths_read_back_by_seq(by_seq: dict[int, int]) -> None:
    seqs = np.asarray(list(by_seq), dtype=np.int64)
    lo, dense = unpack_lengths(pack_lengths(seqs, np.asarray(list(by_seq.values()))))
    assert Lengths(lo, dense).of(seqs).tolist() == list(by_seq.values())


# --- a build corrected by the writes since -------------------------------------------------

TERMS = (11, 22, 33)
N_BEFORE = 60  # chunks 1..60 written before the build


def _blocks_row(
    postings: dict[int, dict[int, tuple[int, int]]], keep: set[int], stats: tuple[int, int]
) -> dict[str, Any]:
    """A ``TERMS`` row of the blocks alone (no packed terms): each term's postings among the
    chunks ``keep``, one block per chunk."""
    n_docs, total_len = stats
    blocks = [(t, s, tf, ln) for t, ps in postings.items() for s, (tf, ln) in ps.items()]
    blocks = [b for b in blocks if b[1] in keep]
    dfs = {t: sum(1 for b in blocks if b[0] == t) for t in TERMS}
    dfs = {t: n for t, n in dfs.items() if n}
    return _row(blocks, dfs, n_docs, total_len)


def _row(
    blocks: list[tuple[int, int, int, int]], dfs: dict[int, int], n_docs: int, total_len: int
) -> dict[str, Any]:
    return {
        "n_docs": n_docs,
        "total_len": total_len,
        "generation": 9,
        "epoch": 5,
        "w_terms": sorted(dfs) or None,
        "w_dfs": [dfs[t] for t in sorted(dfs)] or None,
        "terms": [b[0] for b in blocks] or None,
        "sizes": [1] * len(blocks) or None,
        "postings": len(blocks),
        "chunks": b"".join(_array([b[1]], INT8_OID, 8) for b in blocks),
        "tfs": b"".join(_array([b[2]], INT4_OID, 4) for b in blocks),
        "doc_lens": b"".join(_array([b[3]], INT4_OID, 4) for b in blocks),
    }


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_build_corrected_by_the_writes_since_reads_as_the_blocks(data: st.DataObject) -> None:
    """Chunks 1..60 written, packed; then some deleted and new ones inserted (in ranges that
    may hold chunks the build saw, as two writers' seqs interleave): each packed term, less
    the chunks gone, plus its blocks in the inserted ranges, is the term its blocks give; and
    with a filter, its postings of the chunks passing it, with the project's idf."""
    lens = {s: data.draw(st.integers(1, 300)) for s in range(1, 200)}

    def postings_of(seqs: range | list[int]) -> dict[int, dict[int, tuple[int, int]]]:
        out: dict[int, dict[int, tuple[int, int]]] = {t: {} for t in TERMS}
        for s in seqs:
            for t in data.draw(st.sets(st.sampled_from(TERMS))):
                out[t][s] = (data.draw(st.integers(1, 4)), lens[s])
        return out

    before = postings_of(range(1, N_BEFORE + 1))
    # Inserted since the build: new seqs, and one the build saw re-listed by an interleaved
    # range (its blocks are read again and must count once).
    new = sorted(data.draw(st.sets(st.integers(N_BEFORE + 1, 199), max_size=25)))
    after = postings_of(new)
    gone = data.draw(st.sets(st.integers(1, N_BEFORE), max_size=30))
    gone |= data.draw(st.sets(st.sampled_from(new), max_size=5)) if new else set()
    alive = (set(range(1, N_BEFORE + 1)) | set(new)) - gone
    current = {t: {**before[t], **after[t]} for t in TERMS}
    stats = (len(alive), sum(lens[s] for s in alive))
    # The build: the terms of the first 60 chunks, packed; one term not packed (too rare).
    packed_terms = [t for t in TERMS[:2] if before[t]]
    interleaved = data.draw(st.sampled_from(range(1, N_BEFORE + 1)))
    reread = {s for s in [interleaved, *new] if s in alive}
    delta = [
        (t, s, *current[t][s]) for t in packed_terms for s in sorted(reread) if s in current[t]
    ]
    others = {t for t in TERMS if t not in packed_terms}
    blocks = [(t, s, *current[t][s]) for t in others for s in sorted(alive) if s in current[t]]
    dfs = {t: sum(1 for b in blocks if b[0] == t) for t in others}
    # Filtered or not: a filter's blocks of the terms not packed (their frequencies over the
    # whole project), the packed terms and their blocks inserted since whole, and the chunks
    # that pass it.
    matching = data.draw(st.none() | st.sets(st.integers(1, 199)))
    if matching is not None:
        blocks = [b for b in blocks if b[1] in matching]
    row = _row(blocks + delta, {t: n for t, n in dfs.items() if n}, *stats)
    if matching is not None:
        passing = sorted(matching, key=lambda s: (s * 7919) % 211)  # in any order
        row["matches"] = _array(passing, INT8_OID, 8) if passing else bytes(4) + bytes(8)
    seen = sorted({s for t in packed_terms for s in before[t]})
    row.update(
        p_terms=packed_terms,
        p_data=[
            pack(
                np.asarray(sorted(before[t])),
                np.asarray([before[t][s][0] for s in sorted(before[t])]),
            )
            for t in packed_terms
        ],
        gone=sorted(gone) or None,
        p_build=1,
    )
    lengths = Lengths(
        *unpack_lengths(pack_lengths(np.asarray(seen), np.asarray([lens[s] for s in seen])))
    )
    got = terms_of(row, list(TERMS), lengths)
    want = terms_of(_blocks_row(current, alive, stats), list(TERMS))
    assert got is not None and want is not None
    for t in TERMS:
        a, b = got[2][t], want[2][t]
        assert (a is None) == (b is None), t
        if a is not None and b is not None:
            at = [i for i, s in enumerate(b.seqs.tolist()) if matching is None or s in matching]
            assert a.seqs.tolist() == b.seqs[at].tolist()
            assert a.tfs.tolist() == b.tfs[at].tolist() and a.lens.tolist() == b.lens[at].tolist()
            assert a.idf == b.idf  # the project's, filtered or not
            # What a stem group sums (``stem_terms.merged``): the project's, as the blocks say.
            assert (a.df, a.n_docs) == (b.df, b.n_docs)
            assert a.contrib().tobytes() == b.contrib(at).tobytes()


# --- when a build is due ----------------------------------------------------------------


def _state(**changes: Any) -> dict[str, Any]:
    state = {
        "n_docs": 500_000,
        "unlogged": 7,
        "built_unlogged": 7,
        "built_docs": 500_000,
        "gone": 0,
        "inserted": 0,
        "writes": 0,
    }
    return {**state, **changes}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, False),  # built, nothing since
        ({"built_unlogged": None}, True),  # never built
        ({"unlogged": 8}, True),  # a write that logs nothing came since
        ({"gone": 10_000, "inserted": 9_000}, False),  # within 5% (and 20,000)
        ({"gone": 20_000, "inserted": 9_000}, True),
        ({"writes": 1_001}, True),  # too many writes to correct by
        ({"n_docs": 99_999, "built_unlogged": None}, False),  # too small to pack
    ],
)
def test_a_build_is_due_when_none_holds_or_the_writes_since_grew(
    changes: dict[str, Any], expected: bool
) -> None:
    assert due(_state(**changes), PackConfig()) is expected


def test_the_header_holds_what_unpack_checks() -> None:
    data = pack(np.arange(1, 9), np.ones(8, dtype=np.int64))
    version, kind, tf_width, n, first, chunk_bytes = struct.unpack_from("<BBBIqI", data)
    assert (version, kind, tf_width, n, first, chunk_bytes) == (1, packed.BITMAP, 1, 8, 1, 1)
