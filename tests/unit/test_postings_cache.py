"""The postings kept per term: summed per chunk they give what scoring the blocks at once gives,
whatever order the blocks came in; the cache keeps one generation within its bound."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.chunk_store import postings_cache
from codebase_mcp_search.adapters.postgres.chunk_store.blocks import decoded
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import score
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import PostingsCache, State
from codebase_mcp_search.adapters.postgres.chunk_store.sums import combined
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term, terms_of
from tests.unit.test_postgres_blocks import INT4_OID, INT8_OID, _array

# (term, chunks of one block): a term's blocks hold distinct chunks.
blocks_strategy = st.lists(
    st.tuples(
        st.sampled_from([11, 22, 33, 44]),
        st.lists(st.integers(1, 400), min_size=1, max_size=6, unique=True),
    ),
    min_size=1,
    max_size=12,
)


def _row(blocks: list[tuple[int, list[int]]], seed: int) -> dict[str, Any]:
    """A ``BLOCKS`` row (no filters) for ``blocks``, chunks deduplicated per term."""
    rng = np.random.default_rng(seed)
    seen: dict[int, set[int]] = {}
    kept: list[tuple[int, list[int]]] = []
    for term, chunks in blocks:
        fresh = [c for c in chunks if c not in seen.setdefault(term, set())]
        seen[term].update(fresh)
        if fresh:
            kept.append((term, fresh))
    tfs = [[int(x) for x in rng.integers(1, 5, len(c))] for _, c in kept]
    lens = [[int(x) for x in rng.integers(1, 300, len(c))] for _, c in kept]
    dfs = {t: len(s) for t, s in seen.items() if s}
    return {
        "n_docs": 500,
        "total_len": 500 * 90,
        "generation": 3,
        "epoch": 77,
        "w_terms": sorted(dfs),
        "w_dfs": [dfs[t] for t in sorted(dfs)],
        "terms": [t for t, _ in kept],
        "sizes": [len(c) for _, c in kept],
        "postings": sum(len(c) for _, c in kept),
        "chunks": b"".join(_array(c, INT8_OID, 8) for _, c in kept),
        "tfs": b"".join(_array(x, INT4_OID, 4) for x in tfs),
        "doc_lens": b"".join(_array(x, INT4_OID, 4) for x in lens),
    }


@settings(max_examples=200, deadline=None)
@given(blocks=blocks_strategy, seed=st.integers(0, 1000))
def test_terms_summed_score_as_the_blocks_do(
    blocks: list[tuple[int, list[int]]], seed: int
) -> None:
    row = _row(blocks, seed)
    keys = [11, 22, 33, 44, 55]
    read = terms_of(row, keys)
    assert read is not None
    epoch, generation, terms = read
    assert (epoch, generation) == (77, 3)
    assert terms[55] is None  # never written: held as none
    want = score(row)
    got = combined(terms)
    assert want is not None and got is not None
    seqs, raw, bound = got
    assert seqs.tolist() == want.seqs.tolist()
    assert np.allclose(raw, want.raw, rtol=0, atol=1e-12)
    assert bound == want.bound
    for key, term in terms.items():
        if term is not None:
            assert sorted(term.seqs.tolist()) == sorted(
                {c for t, cs in blocks if t == key for c in cs}
            )


def _terms_one_block_at_a_time(row: dict[str, Any]) -> dict[int, tuple[list[int], bytes]]:
    """Each term's chunks and contributions (their bytes) as the blocks give them, gathered
    block by block in the row's order (the grouping before it was vectorised), then put in
    chunk order."""
    postings = decoded(row)
    assert postings is not None
    out: dict[int, list[tuple[int, float]]] = {}
    at = 0
    for term, size in zip(postings.terms.tolist(), postings.sizes.tolist(), strict=True):
        pairs = out.setdefault(term, [])
        pairs.extend(
            zip(
                postings.chunks[at : at + size].tolist(),
                postings.contrib[at : at + size].tolist(),
                strict=True,
            )
        )
        at += size
    return {
        t: ([s for s, _ in sorted(p)], np.asarray([c for _, c in sorted(p)]).tobytes())
        for t, p in out.items()
    }


@settings(max_examples=200, deadline=None)
@given(blocks=blocks_strategy, seed=st.integers(0, 1000))
def test_each_term_holds_its_blocks_postings_in_chunk_order(
    blocks: list[tuple[int, list[int]]], seed: int
) -> None:
    """Blocks of a term adjacent in the row or scattered among others' (a row is not sorted
    by term), their chunks in any order: each term's postings are its blocks', in chunk
    order (pruning looks chunks up in them), each with its contribution bit for bit."""
    row = _row(blocks, seed)
    read = terms_of(row, [11, 22, 33, 44])
    assert read is not None
    got = {
        key: (term.seqs.tolist(), term.contrib().tobytes())
        for key, term in read[2].items()
        if term is not None
    }
    assert got == _terms_one_block_at_a_time(row)


def _term(n: int) -> Term:
    return Term(np.arange(n, dtype=np.int64), np.ones(n), np.ones(n), 1.0, 1.0, n, 10 * n)


def test_the_cache_keeps_one_generation_within_its_bound() -> None:
    cache = PostingsCache(max_postings=10)
    first = State((1, 0, 0), epoch=5, generation=1)
    cache.add(first, {1: _term(4), 2: None, 3: _term(4)})
    assert set(cache.held(first.token, [1, 2, 3, 4])) == {1, 2, 3}
    cache.held(first.token, [1])  # 1 used last: 3 is the least recently used
    # 5 alone exceeds the bound: not held; 4 pushes out the least recently used (2, then 3).
    cache.add(first, {4: _term(4), 5: _term(11)})
    assert set(cache.held(first.token, [1, 2, 3, 4, 5])) == {1, 4}
    # Another token: nothing answers until a read; the same generation keeps everything.
    later = State((1, 1, 0), epoch=5, generation=1)
    assert cache.held(later.token, [1, 4]) == {}
    cache.add(later, {6: None})
    assert set(cache.held(later.token, [1, 4, 6])) == {1, 4, 6}
    # Another generation replaces everything.
    newer = State((1, 2, 0), epoch=5, generation=2)
    cache.add(newer, {7: _term(1)})
    assert set(cache.held(newer.token, [1, 4, 6, 7])) == {7}
    cache.clear()
    assert cache.state is None and cache.held(newer.token, [7]) == {}


def test_terms_without_postings_are_bounded_by_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings_cache, "MAX_TERMS", 3)
    cache = PostingsCache(max_postings=10)
    state = State((1, 0, 0), epoch=5, generation=1)
    cache.add(state, dict.fromkeys(range(5)))
    assert set(cache.held(state.token, range(5))) == {2, 3, 4}
