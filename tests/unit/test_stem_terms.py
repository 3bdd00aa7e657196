"""Stem groups among a Postgres search's terms (``stem_terms``): a group's merged term holds the
union of its terms' chunks (ascending, distinct), their frequencies summed, its idf the group's
weight times that of the summed document frequency (at most the chunk count); a group the
project holds no term of adds nothing; and the sums of a search with groups are those of the
reference (``models.StemGroup``) to the normalised score."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import contributions, plain_elements
from codebase_mcp_search.adapters.postgres.chunk_store.rows import term_key
from codebase_mcp_search.adapters.postgres.chunk_store.stem_terms import (
    GROUP_KEYS,
    grouped,
    merged,
    plain_sums,
    read_keys,
    search_keys,
)
from codebase_mcp_search.adapters.postgres.chunk_store.sums import combined, ranked
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term, terms_of
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import StemGroup
from tests.unit.test_postgres_blocks import blocks_rows

N_DOCS = 300
AVG = 31.5
# Each chunk's length, by seq (1 to N_DOCS): the same in every term holding it.
LENGTHS = np.random.default_rng(3).integers(5, 90, N_DOCS + 1)


@st.composite
def terms(draw: st.DrawFn, *, empty: bool = True) -> Term:
    """A term on chunks of 1 to ``N_DOCS`` (none, when ``empty``: all filtered out), its
    frequencies in a byte or in four, its project-wide document frequency at least its
    postings."""
    seqs = sorted(draw(st.sets(st.integers(1, N_DOCS), min_size=0 if empty else 1, max_size=60)))
    dtype = draw(st.sampled_from([np.uint8, np.int32]))
    tfs = np.asarray([draw(st.integers(1, 40)) for _ in seqs], dtype=dtype)
    array = np.asarray(seqs, dtype=np.int64)
    lens = LENGTHS[array].astype(np.int32)
    df = draw(st.integers(max(1, len(seqs)), N_DOCS))
    return Term(array, tfs, lens, lexical.idf(N_DOCS, df), AVG, df, N_DOCS)


weights = st.floats(0.05, 1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(term=terms(), weight=weights)
def test_a_group_of_one_term_is_that_term_at_the_group_s_weight(term: Term, weight: float) -> None:
    got = grouped({7: term}, [], [((7,), weight)])
    assert list(got) == [GROUP_KEYS]
    one = got[GROUP_KEYS]
    assert one is not None
    assert one.seqs.tolist() == term.seqs.tolist() and one.tfs.tolist() == term.tfs.tolist()
    assert (one.df, one.n_docs, one.avg) == (term.df, N_DOCS, AVG)
    assert one.idf == weight * lexical.idf(N_DOCS, term.df)
    expected = contributions(term.tfs, term.lens, AVG, weight * lexical.idf(N_DOCS, term.df))
    assert one.contrib().tobytes() == expected.tobytes()
    np.testing.assert_allclose(one.contrib(), weight * term.contrib(), rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(group=st.lists(terms(), min_size=1, max_size=5), weight=weights)
def test_a_group_s_term_is_the_union_of_its_terms_frequencies_summed(
    group: list[Term], weight: float
) -> None:
    one = merged(group, weight)
    union = sorted({int(s) for t in group for s in t.seqs})
    assert one.seqs.tolist() == union  # ascending, distinct
    summed: dict[int, int] = {}
    for t in group:
        for s, tf in zip(t.seqs.tolist(), t.tfs.tolist(), strict=True):
            summed[s] = summed.get(s, 0) + tf
    assert one.tfs.tolist() == [summed[s] for s in union]
    assert one.lens.tolist() == LENGTHS[union].tolist()
    df = min(N_DOCS, sum(t.df for t in group))
    assert (one.df, one.idf) == (df, weight * lexical.idf(N_DOCS, df))


def test_a_group_holding_no_term_adds_nothing_and_missing_terms_are_left_out() -> None:
    a = Term(np.asarray([2, 5]), np.asarray([1, 3]), LENGTHS[[2, 5]], 1.5, AVG, 2, N_DOCS)
    b = Term(np.asarray([5, 9]), np.asarray([2, 2]), LENGTHS[[5, 9]], 1.2, AVG, 4, N_DOCS)
    read: dict[int, Term | None] = {1: a, 2: b, 3: None}
    got = grouped(read, [1, 3], [((3, 4), 0.5), ((2, 3), 0.5), ((1, 2), 0.25)])
    # The query's terms as read (None kept: no postings); group 0 holds no term: no key.
    assert list(got) == [1, 3, GROUP_KEYS + 1, GROUP_KEYS + 2]
    assert got[1] is a and got[3] is None
    alone, both = got[GROUP_KEYS + 1], got[GROUP_KEYS + 2]
    assert alone is not None and both is not None
    assert alone.seqs.tolist() == [5, 9] and alone.df == 4
    assert both.seqs.tolist() == [2, 5, 9] and both.tfs.tolist() == [1, 5, 2] and both.df == 6


def test_a_group_whose_postings_a_filter_left_out_still_counts_in_the_bound() -> None:
    none = np.zeros(0, dtype=np.int64)
    cut = Term(none, none, none, lexical.idf(N_DOCS, 40), AVG, 40, N_DOCS)
    q = Term(np.asarray([3]), np.asarray([2]), LENGTHS[[3]], 2.0, AVG, 1, N_DOCS)
    got = grouped({1: q, 2: cut}, [1], [((2,), 0.5)])
    found = combined(got)
    assert found is not None
    seqs, _, bound = found
    assert seqs.tolist() == [3]
    assert bound == lexical.upper_bound([2.0, 0.5 * lexical.idf(N_DOCS, 40)])


def test_group_keys_come_after_every_term_key() -> None:
    assert GROUP_KEYS > 2**63 - 1
    keys, groups = search_keys(
        ["parse", "parse", "config"],
        [StemGroup(("parser", "parsing", "parser"), 0.5), StemGroup((), 0.5)],
    )
    assert keys == [term_key("parse"), term_key("config")]
    assert groups == (((term_key("parser"), term_key("parsing")), 0.5),)  # the empty one out
    assert read_keys(keys, [((keys[1], 9), 0.5), ((9, 10), 0.5)]) == [*keys, 9, 10]


def _reference(
    query: list[Term | None], groups: list[tuple[list[Term | None], float]]
) -> dict[int, float]:
    """Each chunk's normalised score from scratch, as the memory store computes it: the query
    terms, then each group's postings merged per chunk, one ``term_score`` at a time."""
    lists: list[tuple[dict[int, int], float]] = []
    for t in query:
        if t is not None:
            lists.append((dict(zip(t.seqs.tolist(), t.tfs.tolist(), strict=True)), t.idf))
    for group, weight in groups:
        held = [t for t in group if t is not None]
        if not held:
            continue
        tf: dict[int, int] = {}
        for t in held:
            for s, f in zip(t.seqs.tolist(), t.tfs.tolist(), strict=True):
                tf[s] = tf.get(s, 0) + f
        df = min(N_DOCS, sum(t.df for t in held))
        lists.append((tf, weight * lexical.idf(N_DOCS, df)))
    raw: dict[int, float] = {}
    for postings, idf in lists:
        for s, f in postings.items():
            raw[s] = raw.get(s, 0.0) + lexical.term_score(f, int(LENGTHS[s]), AVG, idf)
    bound = lexical.upper_bound(idf for _, idf in lists)
    return {s: lexical.normalised(r, bound) for s, r in raw.items()}


maybe_terms = st.one_of(st.none(), terms())


@settings(max_examples=200, deadline=None)
@given(
    query=st.lists(maybe_terms, max_size=3),
    groups=st.lists(st.tuples(st.lists(maybe_terms, min_size=1, max_size=3), weights), max_size=3),
    shared=st.booleans(),
)
def test_a_search_with_groups_scores_as_the_reference(
    query: list[Term | None], groups: list[tuple[list[Term | None], float]], shared: bool
) -> None:
    if shared and query:  # the first query term in every group too: counted in each
        groups = [([*group, query[0]], weight) for group, weight in groups]
    read: dict[int, Term | None] = dict(enumerate(query))
    spec: list[tuple[tuple[int, ...], float]] = []
    for group, weight in groups:
        keys: list[int] = []
        for t in group:
            key = 0 if shared and query and t is query[0] else len(read) + 100
            read.setdefault(key, t)
            keys.append(key)
        spec.append((tuple(keys), weight))
    expected = _reference(query, groups)
    got = grouped(read, list(range(len(query))), spec)
    found = ranked(got, 5)
    if found is None:
        assert not expected
        return
    seqs, raw, bound, total = found
    scores = {int(s): lexical.normalised(float(r), bound) for s, r in zip(seqs, raw, strict=True)}
    assert scores == expected and total == len(expected)


@settings(max_examples=300, deadline=None)
@given(blocks_rows(), st.data())
def test_plain_python_sums_groups_as_numpy_does_to_the_last_bit(
    row: dict[str, object], data: st.DataObject
) -> None:
    """A command-line search (no numpy loaded, a small row) sums a search with groups in
    plain Python (``plain_sums``): the same chunks, floats and bound as the numpy path.
    (A term's blocks are of distinct files: a chunk is in one of them at most.)"""
    sizes = list(row["sizes"])  # type: ignore[call-overload]
    seqs_of = plain_elements(row["chunks"], sizes, "q")  # type: ignore[arg-type]
    at, per_term = 0, {}
    for term, size in zip(row["terms"], sizes, strict=True):  # type: ignore[call-overload]
        per_term.setdefault(term, []).extend(seqs_of[at : at + size])
        at += size
    assume(all(len(s) == len(set(s)) for s in per_term.values()))
    held = list(row["w_terms"])  # type: ignore[call-overload]
    absent = [k + 1 for k in held if k + 1 not in held and k + 1 < 2**63]
    pool = held + absent
    keys = data.draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))
    groups = data.draw(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True).map(tuple),
                st.sampled_from([0.5, 1.25, 2.0]),
            ),
            max_size=3,
        )
    )
    found = terms_of(row, read_keys(keys, groups))
    assert found is not None
    by_numpy = combined(grouped(found[2], keys, groups))
    by_python = plain_sums(row, keys, groups)
    assert by_python is not None
    if by_numpy is None:  # no term or group held: nothing to sum
        assert by_python == ([], [], 0.0)
        return
    seqs, raw, bound = by_numpy
    assert by_python[0] == seqs.tolist()
    assert by_python[1] == raw.tolist()  # equal floats, not close
    assert by_python[2] == bound
