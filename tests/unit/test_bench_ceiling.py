"""``bench.ceiling``: the per-question oracle over search modes, in the bench's aggregation."""

from __future__ import annotations

import statistics
from typing import Any

from bench.ceiling import ceiling, mrr_oracle, repo_oracle
from hypothesis import given
from hypothesis import strategies as st

_ndcg = st.floats(0.0, 1.0)
_rank = st.none() | st.integers(1, 20)


def _entry(rows: dict[str, list[float]], cosqa: list[int | None]) -> dict[str, Any]:
    return {
        "rows": {r: [{"ndcg": x} for x in xs] for r, xs in rows.items()},
        "cosqa_ranks": cosqa,
    }


def test_the_oracle_keeps_each_question_s_better_mode_and_means_by_repository() -> None:
    a = _entry({"r1": [1.0, 0.0], "r2": [0.5]}, [1, None, 4])
    b = _entry({"r1": [0.0, 0.5], "r2": [0.25]}, [2, 3, 11])
    got = repo_oracle({"a": a, "b": b}, ("a", "b"))
    # r1: (1.0 + 0.5) / 2, r2: 0.5; the overall figure is the mean of the repositories'.
    assert got["repo"] == {"r1": 0.75, "r2": 0.5}
    assert got["ndcg@10"] == 0.625
    # Ranks past 10 count nothing: 1, 1/3, 1/4.
    assert mrr_oracle({"a": a, "b": b}, ("a", "b"), "cosqa_ranks") == round(
        (1 + 1 / 3 + 1 / 4) / 3, 4
    )


@given(
    st.lists(st.tuples(_ndcg, _ndcg, _ndcg), min_size=1, max_size=8),
    st.lists(st.tuples(_rank, _rank, _rank), min_size=1, max_size=8),
)
def test_an_oracle_is_at_least_each_mode_it_chooses_among_and_grows_with_them(
    questions: list[tuple[float, float, float]], ranks: list[tuple[int | None, ...]]
) -> None:
    dump = {
        f"{mode}/default": {
            **_entry({"r": [q[i] for q in questions]}, [r[i] for r in ranks]),
            "ndcg@10": round(statistics.fmean(q[i] for q in questions), 4),
        }
        for i, mode in enumerate(("hybrid", "lexical", "semantic"))
    }
    out = ceiling(dump, "default")
    pair = out["oracles"]["hybrid+lexical"]
    trio = out["oracles"]["hybrid+lexical+semantic"]
    for mode in ("hybrid", "lexical"):
        assert pair["ndcg@10"] >= out["modes"][mode]["ndcg@10"] - 1e-4
    assert trio["ndcg@10"] >= pair["ndcg@10"]
    assert trio["cosqa_mrr"] >= pair["cosqa_mrr"]
