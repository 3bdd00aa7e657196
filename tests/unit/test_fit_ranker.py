"""bench.fit_ranker's round-six pieces: weights apart for the vector modes (in
bench.ranker_space), the guard by another index's BASE (``--reference``), and the held-out
figures by category."""

from __future__ import annotations

import numpy as np
from bench import fit_ranker, ranker_space

GROUPS = ["@cosqa", "@own", "a", "b"]


def _scores(rows: list[list[float]]) -> dict[str, np.ndarray]:
    """The same per-group figures in every mode (rows: configurations x ``GROUPS``)."""
    return {mode: np.array(rows, dtype=float) for mode in fit_ranker.MODES}


def test_vector_mode_weights_replace_the_shared_ones_only_where_vectors_rank() -> None:
    config = {
        **ranker_space.BASE,
        "path_boost": 1.0,
        "vec.path_boost": 0.25,
        "vec.stem_boost": None,
    }

    assert ranker_space.variant(config, "hybrid").ranking.path_boost == 0.25
    assert ranker_space.variant(config, "semantic").ranking.path_boost == 0.25
    assert ranker_space.variant(config, "lexical").ranking.path_boost == 1.0
    # None: the shared weight in every mode.
    assert ranker_space.variant(config, "hybrid").ranking.stem_boost == config["stem_boost"]


def test_a_reference_no_configuration_matches_on_every_block_is_kept_by_every_fold() -> None:
    # Row 0: today's index; row 1: the other index's BASE; row 2 better on the repositories
    # but below today's on CoSQA and the own eval (so no fold, whichever group it leaves
    # out, finds it admissible), and above row 1 on every block.
    scores = _scores([[0.5, 0.7, 0.8, 0.8], [0.4, 0.6, 0.7, 0.7], [0.45, 0.65, 0.95, 0.95]])
    today: dict[str, float | None] = {"@reference": None}
    configs: list[dict[str, float | None]] = [today, {"x": 1.0}, {"x": 2.0}]
    allowed = {g: np.ones(3, dtype=bool) for g in [*GROUPS, "*"]}

    report = fit_ranker.cross_validate(configs, scores, GROUPS, allowed, ref=0)

    assert all(c == today for c in report["chosen_by_fold"].values())
    assert report["fitted"] == today
    assert report["held_out"]["hybrid"] == {
        "repo_ndcg@10": 0.8,
        "cosqa_mrr@10": 0.5,
        "own_mrr@10": 0.7,
    }
    # Guarded by the other index's BASE (row 1) instead, without today's to keep, row 2 wins.
    others = {g: np.array([False, True, True]) for g in allowed}
    assert fit_ranker.cross_validate(configs, scores, GROUPS, others, ref=1)["fitted"] == {"x": 2.0}


def test_a_configuration_at_least_todays_on_every_block_is_adopted() -> None:
    scores = _scores([[0.5, 0.7, 0.8, 0.8], [0.5, 0.7, 0.9, 0.9]])
    allowed = {g: np.ones(2, dtype=bool) for g in [*GROUPS, "*"]}

    configs: list[dict[str, float | None]] = [{"@reference": None}, {"x": 1.0}]
    report = fit_ranker.cross_validate(configs, scores, GROUPS, allowed)

    assert report["fitted"] == {"x": 1.0}
    assert report["held_out"]["hybrid"]["repo_ndcg@10"] == 0.9


def test_held_out_by_category_means_each_repository_first() -> None:
    per_query = {"hybrid": {"a": [1.0, 0.0, 0.5], "b": [0.0]}}
    cats = {"a": ["symbol", "symbol", "architecture"], "b": ["symbol"]}

    # symbol: a's mean 0.5 and b's 0.0, then their mean; not the mean of the three queries.
    assert fit_ranker.by_category(per_query, cats) == {
        "hybrid": {"architecture": 0.5, "symbol": 0.25}
    }


def test_a_lexical_only_grid_holds_no_weight_lexical_mode_never_reads(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ranker_space, "BASE", dict(ranker_space.BASE))
    monkeypatch.setattr(ranker_space, "SPACE", dict(ranker_space.SPACE))
    ranker_space.lexical_only()
    names = set(ranker_space.SPACE) | set(ranker_space.BASE)
    assert not any(n.startswith(("fusion.", "vec.")) or n == "named_lexical_weight" for n in names)
    assert 0.0 in ranker_space.SPACE["path_boost"]
    # Every configuration of the pool ranks in lexical mode, each weight moved once.
    configs = ranker_space.pool(0, 0)
    assert all(set(c) == set(ranker_space.BASE) for c in configs)
    assert len({ranker_space.key(c) for c in configs}) == len(configs)
    for c in configs:
        ranker_space.variant(c, "lexical")
