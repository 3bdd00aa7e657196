"""Hybrid fusion invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codebase_mcp_search.core.defaults import MAX_SEARCH_LIMIT
from codebase_mcp_search.core.fusion import FusionConfig, fuse
from codebase_mcp_search.core.models import Chunk, ScoredChunk


def _chunk(i: int) -> Chunk:
    return Chunk(
        id=f"c{i}",
        repository_id="r",
        file_path=f"f{i:03d}.py",
        language="python",
        start_line=1,
        end_line=1,
        content=f"x{i}",
        content_hash=f"h{i}",
        token_count=1,
    )


def _ranked(ids: list[int], scores: list[float]) -> list[ScoredChunk]:
    return [ScoredChunk(chunk=_chunk(i), score=s) for i, s in zip(ids, scores, strict=False)]


lists = st.lists(st.integers(0, 30), unique=True, max_size=15)
methods = st.sampled_from(["rrf", "linear"])
weights = st.floats(0.01, 5)


@given(lists, lists, methods, st.sampled_from(["none", "minmax"]), weights, weights)
def test_fused_scores_in_unit_interval_sorted_and_complete(
    a: list[int], b: list[int], method: str, normalisation: str, ws: float, wl: float
) -> None:
    sem = _ranked(a, sorted((1 - i / 40 for i in range(len(a))), reverse=True))
    lex = _ranked(b, sorted((1 - i / 40 for i in range(len(b))), reverse=True))
    cfg = FusionConfig(
        method=method,  # type: ignore[arg-type]
        normalisation=normalisation,  # type: ignore[arg-type]
        semantic_weight=ws,
        lexical_weight=wl,
    )
    fused = fuse(sem, lex, cfg)
    assert {f.chunk.id for f in fused} == {f"c{i}" for i in (*a, *b)}
    assert all(0.0 <= f.score <= 1.0 for f in fused)
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)


@given(lists.filter(bool), methods)
def test_identical_lists_keep_their_order(a: list[int], method: str) -> None:
    scores = [1 - i / 40 for i in range(len(a))]
    fused = fuse(_ranked(a, scores), _ranked(a, scores), FusionConfig(method=method))  # type: ignore[arg-type]
    assert [f.chunk.id for f in fused] == [f"c{i}" for i in a]


def test_first_in_both_scores_one_with_rrf() -> None:
    rrf = FusionConfig(method="rrf")
    fused = fuse(_ranked([1, 2], [0.9, 0.5]), _ranked([1, 3], [0.7, 0.2]), rrf)
    assert fused[0].chunk.id == "c1" and fused[0].score == 1.0


def test_weights_decide_disagreements() -> None:
    sem, lex = _ranked([1, 2], [0.9, 0.8]), _ranked([2, 1], [0.9, 0.1])
    for method in ("rrf", "linear"):
        semantic_first = FusionConfig(method=method, semantic_weight=1, lexical_weight=0.2)
        lexical_first = FusionConfig(method=method, semantic_weight=0.2, lexical_weight=1)
        assert fuse(sem, lex, semantic_first)[0].chunk.id == "c1"
        assert fuse(sem, lex, lexical_first)[0].chunk.id == "c2"
    raw = FusionConfig(method="linear", normalisation="none", semantic_weight=1, lexical_weight=1)
    assert fuse(sem, lex, raw)[0].chunk.id == "c2"  # (0.8 + 0.9) / 2 beats (0.9 + 0.1) / 2


def test_minmax_weighs_each_list_by_its_spread_not_its_scale() -> None:
    # Semantic scores bunch together (cosines of one query), lexical ones spread out: raw
    # scores let the small semantic gap count for little; rescaled, both gaps count fully.
    sem = _ranked([1, 2, 3], [0.80, 0.78, 0.76])
    lex = _ranked([2, 1, 3], [0.90, 0.75, 0.10])
    raw = FusionConfig(method="linear", normalisation="none", semantic_weight=1, lexical_weight=1)
    assert fuse(sem, lex, raw)[0].chunk.id == "c2"
    mm = FusionConfig(
        method="linear", normalisation="minmax", semantic_weight=1.2, lexical_weight=1
    )
    fused = fuse(sem, lex, mm)
    assert fused[0].chunk.id == "c1"  # 1.2 * 1 + 1 * 0.8125 beats 1.2 * 0.5 + 1 * 1
    assert fused[-1].chunk.id == "c3" and fused[-1].score == 0.0


def test_zero_weight_list_is_ignored() -> None:
    sem, lex = _ranked([1, 2], [0.9, 0.8]), _ranked([2, 3], [0.9, 0.8])
    fused = fuse(sem, lex, FusionConfig(semantic_weight=1, lexical_weight=0))
    assert [f.chunk.id for f in fused][:2] == ["c1", "c2"]


def test_ties_break_by_path() -> None:
    fused = fuse(
        _ranked([5], [0.5]), _ranked([3], [0.5]), FusionConfig(semantic_weight=1, lexical_weight=1)
    )
    assert [f.chunk.id for f in fused] == ["c3", "c5"]


def test_candidate_depth_is_the_same_for_every_limit() -> None:
    cfg = FusionConfig()
    assert {cfg.depth(limit) for limit in range(1, MAX_SEARCH_LIMIT + 1)} == {cfg.candidates}
    assert FusionConfig(candidates=20).depth(30) == 30  # never fewer than the limit


def test_a_flat_semantic_list_weighs_less_than_a_spread_one() -> None:
    # Semantic scores within 0.02 of each other: the model is unsure, so its first does not
    # reach 1 and a clear lexical first wins; spread over more than the floor, it reaches 1.
    flat = _ranked([1, 2], [0.71, 0.69])
    lex = _ranked([2, 1], [0.9, 0.1])
    config = FusionConfig(semantic_weight=1.0, lexical_weight=0.5, semantic_min_spread=0.1)
    fused = fuse(flat, lex, config)
    assert [s.chunk.id for s in fused] == ["c2", "c1"]
    assert fused[1].score == pytest.approx((0.2 + 0.0) / 1.5)
    spread = _ranked([1, 2], [0.9, 0.6])
    assert [s.chunk.id for s in fuse(spread, lex, config)] == ["c1", "c2"]
    no_floor = config.model_copy(update={"semantic_min_spread": 0.0})
    assert [s.chunk.id for s in fuse(flat, lex, no_floor)] == ["c1", "c2"]


@given(lists, lists, st.floats(0.0, 1.0))
def test_a_spread_floor_keeps_scores_in_range_and_each_list_in_order(
    a: list[int], b: list[int], floor: float
) -> None:
    sem = _ranked(a, sorted((1 - i / 40 for i in range(len(a))), reverse=True))
    config = FusionConfig(semantic_min_spread=floor, lexical_weight=0.0)
    fused = fuse(sem, _ranked(b, [0.5] * len(b)), config)
    assert all(0.0 <= s.score <= 1.0 for s in fused)
    # With no lexical weight the semantic candidates keep their order.
    ids = {s.chunk.id for s in sem}
    assert [s.chunk.id for s in fused if s.chunk.id in ids] == [s.chunk.id for s in sem]


@given(lists, lists, weights, weights, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_best_share_moves_each_score_from_the_weighted_mean_toward_the_better_list(
    a: list[int], b: list[int], ws: float, wl: float, share: float, other: float
) -> None:
    sem = _ranked(a, sorted((1 - i / 40 for i in range(len(a))), reverse=True))
    lex = _ranked(b, sorted((1 - i / 40 for i in range(len(b))), reverse=True))
    lo, hi = sorted((share, other))

    def fused(s: float) -> dict[str, float]:
        config = FusionConfig(semantic_weight=ws, lexical_weight=wl, best_share=s)
        return {f.chunk.id: f.score for f in fuse(sem, lex, config)}

    mean, low, high, best = fused(0.0), fused(lo), fused(hi), fused(1.0)
    for cid, m in mean.items():
        # Between the weighted mean (share 0) and the better list's score (share 1), rising.
        assert m - 1e-12 <= low[cid] <= high[cid] + 1e-12 <= best[cid] + 2e-12
