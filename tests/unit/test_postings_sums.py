"""Summing a search's terms: the pruned sum (``sums.ranked``) chooses the same top chunks, with
the same scores to the last bit and the same count, as summing every chunk; and it prunes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.chunk_store import sums
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import Scored, candidates
from codebase_mcp_search.adapters.postgres.chunk_store.sums import combined, ranked
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term
from codebase_mcp_search.core import lexical

N_DOCS = 2_000


def _term(rng: np.random.Generator, df: int, span: int) -> Term:
    seqs = np.sort(rng.choice(np.arange(1, span + 1), size=df, replace=False))
    tfs = rng.integers(1, 4, df).astype(np.uint8)
    lens = rng.integers(5, 60, df).astype(np.uint16)
    return Term(seqs, tfs, lens, lexical.idf(N_DOCS, df), 30.0, df, N_DOCS)


def _df(term: Term) -> tuple[int, int]:
    """The document frequency and chunk count ``term``'s idf is of."""
    return term.df, term.n_docs


def _top(found: tuple[Any, ...], k: int) -> tuple[dict[int, float], dict[int, bytes], int]:
    """The candidates for the top ``k`` with their normalised scores, their raw sums' bits,
    and the count."""
    seqs, raw, bound = found[:3]
    total = found[3] if len(found) > 3 else len(seqs)
    top = candidates(Scored(seqs, raw, bound, epoch=0), min(k, len(raw)))
    bits = {int(s): r.tobytes() for s, r in zip(seqs, raw, strict=True) if int(s) in top}
    return top, bits, total


@settings(max_examples=200, deadline=None)
@given(
    dfs=st.lists(st.one_of(st.integers(1, 40), st.integers(300, N_DOCS)), min_size=1, max_size=5),
    k=st.integers(1, 120),
    seed=st.integers(0, 10_000),
    ties=st.booleans(),
)
def test_the_pruned_top_is_the_whole_sum_s_top(
    dfs: list[int], k: int, seed: int, ties: bool
) -> None:
    rng = np.random.default_rng(seed)
    terms: dict[int, Term | None] = {i: _term(rng, df, N_DOCS) for i, df in enumerate(dfs)}
    if ties:  # every posting alike: the top is all ties, broken later by path and line
        terms = {
            i: Term(
                t.seqs,
                np.ones(t.size, np.uint8),
                np.full(t.size, 30, np.uint16),
                t.idf,
                30.0,
                *_df(t),
            )
            for i, t in terms.items()
            if t is not None
        }
    terms[99] = None  # a term without postings
    whole = combined(terms)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sums, "PRUNE_POSTINGS", 0)  # pruned whatever the size
        found = ranked(terms, k)
    assert whole is not None and found is not None
    assert _top(found, k) == _top(whole, k)


def test_a_common_term_is_summed_only_where_a_rare_one_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sums, "PRUNE_POSTINGS", 0)
    rng = np.random.default_rng(7)
    rare, common = _term(rng, 30, N_DOCS), _term(rng, N_DOCS, N_DOCS)
    terms: dict[int, Term | None] = {1: common, 2: rare}
    found = ranked(terms, 10)
    whole = combined(terms)
    assert found is not None and whole is not None
    assert len(found[0]) < 200 < len(whole[0])  # pruned: the rare term's chunks only
    assert found[3] == len(whole[0]) == N_DOCS  # the count is every chunk holding a term
    assert _top(found, 10) == _top(whole, 10)


def test_chunks_of_the_other_terms_alone_still_reach_the_top(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two terms alike in reach, on chunks apart: the best chunks hold the second alone (more
    often, in shorter chunks), and the pruned top holds them as the whole sum's does."""
    monkeypatch.setattr(sums, "PRUNE_POSTINGS", 0)
    weak = Term(
        np.arange(1, 21), np.ones(20, np.uint8), np.full(20, 80, np.uint16), 4.0, 30.0, 20, N_DOCS
    )
    strong = Term(
        np.arange(101, 123),
        np.full(22, 9, np.uint8),
        np.full(22, 10, np.uint16),
        3.9,
        30.0,
        22,
        N_DOCS,
    )
    terms: dict[int, Term | None] = {1: weak, 2: strong}
    found, whole = ranked(terms, 10), combined(terms)
    assert found is not None and whole is not None
    top, _, total = _top(found, 10)
    assert set(top) <= set(range(101, 123)) and total == 42
    assert _top(found, 10) == _top(whole, 10)
