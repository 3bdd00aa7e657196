"""Learning to rank over the ranking stack's top N (issue 36, round six): fit and held out.

Over a ``bench.ltr dump``: one linear pairwise model (RankNet's logistic loss on the feature
differences of a relevant and a less relevant candidate of one question) per mode, re-scoring
the stack's first N candidates; the rest of the list keeps its place, and the re-ordered list
goes through the product's ``collapse`` and the benches' own metric (``repo_search.ndcg_at_10``
over files and spans, ``retrieval.rank_of`` for CoSQA and the own eval). The identity (today's
order) is checked to give the baseline first.

Leave one group out (16 repositories, CoSQA, the own eval), per mode: on the other 17 groups
each regularisation strength is fitted, and the fold's configuration is the one whose blocks
(the repositories' mean NDCG@10, CoSQA MRR@10, own MRR@10) average highest on those 17 among
the admissible ones (no block below today's; today's order is always admissible); the held-out
group is scored by it. Questions weigh so that each block weighs alike in the fit.

    python -m bench.ltr_fit --dump FILE [--cs 0.001,0.01,0.1,1] [--top 30] [--out FILE]
        [--model linear|trees]
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import repo_search
from bench.ltr import FEATURES
from bench.retrieval import rank_of
from codebase_mcp_search.core.services.hits import collapse

Model = Callable[[np.ndarray], np.ndarray]


def question_score(row: dict[str, Any], order: Sequence[int], meta: dict[str, Any]) -> float:
    """The bench's figure for one question with its head in ``order``: NDCG@10 for a
    repository question, the reciprocal rank (within 10) for CoSQA and the own eval."""
    out = row["out"]
    head = len(order)
    ranked = [out[i] for i in order] + out[head:]
    hits = [sc.chunk for sc, _ in collapse(ranked, 10)]
    if row["kind"] == "repo":
        q = meta[row["group"]]["queries"][row["qi"]]
        return repo_search.ndcg_at_10(hits, q["targets"], q["nrel"])
    path, start, end = row["spec"]
    r = rank_of(hits, path, start, end)
    return 1.0 / r if r and r <= 10 else 0.0


def blocks(scores: dict[str, list[float]]) -> dict[str, float]:
    """Per block: the repositories' mean of means, CoSQA's and the own eval's mean (rounded
    as the benches report them)."""
    repos = [statistics.fmean(v) for g, v in scores.items() if g not in ("cosqa", "own")]
    out: dict[str, float] = {}
    if repos:
        out["repo"] = round(statistics.fmean(repos), 4)
    for g in ("cosqa", "own"):
        if scores.get(g):
            out[g] = round(statistics.fmean(scores[g]), 4)
    return out


UNIT = "files"
LAMBDA_WEIGHTS = False


def firsts(row: dict[str, Any]) -> list[int]:
    """The positions of the head where a file appears first (the stack's order)."""
    if "_firsts" not in row:
        seen: set[tuple[str, str]] = set()
        out: list[int] = []
        for i, sc in enumerate(row["out"][: len(row["x"])]):
            k = (sc.chunk.repository_id, sc.chunk.file_path)
            if k not in seen:
                seen.add(k)
                out.append(i)
        row["_firsts"] = out
    firsts: list[int] = row["_firsts"]
    return firsts


def order_of(row: dict[str, Any], model: Model | None) -> list[int]:
    """The head's new order. ``UNIT`` chunks: every chunk by its score. ``files``: the files
    re-ordered by their first chunk's score, each file's chunks keeping their order, and the
    slots of later chunks kept (the stack's per-file decay placed them)."""
    n = len(row["x"])
    if model is None or n == 0:
        return list(range(n))
    if UNIT == "chunks":
        s = model(row["x"])
        # Ties keep the stack's order: the identity model keeps today's ranking exactly.
        return sorted(range(n), key=lambda i: (-s[i], i))
    heads = firsts(row)
    s = model(row["x"][heads])
    moved = [heads[j] for j in sorted(range(len(heads)), key=lambda j: (-s[j], j))]
    new = list(range(n))
    for slot, i in zip(heads, moved, strict=True):
        new[slot] = i
    # A file's chunks in their own order over the slots they now hold.
    by_file: dict[tuple[str, str], list[int]] = defaultdict(list)
    for p, i in enumerate(new):
        c = row["out"][i].chunk
        by_file[(c.repository_id, c.file_path)].append(p)
    for slots in by_file.values():
        for p, i in zip(slots, sorted(new[p] for p in slots), strict=True):
            new[p] = i
    return new


def units(row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The rows a model scores, and their labels: every chunk, or each file's first."""
    if UNIT == "chunks":
        return row["x"], row["y"]
    h = firsts(row)
    return row["x"][h], row["y"][h]


def evaluate(
    rows: Sequence[dict[str, Any]], model: Model | None, meta: dict[str, Any]
) -> dict[str, list[float]]:
    by_group: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_group[row["group"]].append(question_score(row, order_of(row, model), meta))
    return dict(by_group)


def _block(group: str) -> str:
    return group if group in ("cosqa", "own") else "repo"


def pairs(rows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Feature differences of each (more relevant, less relevant) pair of a question's head,
    weighed so that each question weighs 1 / its block's questions."""
    per_block: dict[str, int] = defaultdict(int)
    for row in rows:
        per_block[_block(row["group"])] += 1
    diffs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for row in rows:
        x, y = units(row)
        hi, lo = np.nonzero(y[:, None] > y[None, :])
        if not len(hi):
            continue
        diffs.append(x[hi] - x[lo])
        if LAMBDA_WEIGHTS:
            # LambdaRank's weight at today's order: how much the metric's discount changes
            # when the two swap places (units are in today's order), times their gains' gap.
            disc = 1.0 / np.log2(np.arange(len(y)) + 2.0)
            lw = np.abs(disc[hi] - disc[lo]) * (y[hi] - y[lo])
            w = lw / (lw.sum() * per_block[_block(row["group"])])
        else:
            w = np.full(len(hi), 1.0 / (len(hi) * per_block[_block(row["group"])]))
        weights.append(w)
    return np.concatenate(diffs), np.concatenate(weights)


def fit_linear(rows: Sequence[dict[str, Any]], c: float) -> tuple[Model, np.ndarray]:
    """A RankNet-style linear model: logistic regression on standardised pair differences
    (each pair both ways, no intercept). Returns the scorer and its weights in feature units."""
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    x_all = np.concatenate([units(r)[0] for r in rows])
    std = x_all.std(axis=0)
    std[std == 0] = 1.0
    d, w = pairs(rows)
    d = d / std
    xs = np.concatenate([d, -d])
    ys = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    ws = np.concatenate([w, w])
    lr = LogisticRegression(C=c, fit_intercept=False, max_iter=2000)
    lr.fit(xs, ys, sample_weight=ws * len(ws) / ws.sum())
    coef = lr.coef_[0] / std
    return (lambda x: x @ coef), coef


def fit_trees(rows: Sequence[dict[str, Any]], c: float) -> tuple[Model, np.ndarray]:
    """A small pointwise tree ensemble (gradient-boosted regression on the labels, depth 3,
    ``c`` x 100 trees): the scorer and the features' importances."""
    from sklearn.ensemble import GradientBoostingRegressor  # type: ignore[import-untyped]

    x = np.concatenate([units(r)[0] for r in rows])
    per_block: dict[str, int] = defaultdict(int)
    for row in rows:
        per_block[_block(row["group"])] += 1
    y = np.concatenate([np.minimum(units(r)[1], 1.0) for r in rows])
    w = np.concatenate(
        [np.full(len(units(r)[1]), 1.0 / per_block[_block(r["group"])]) for r in rows]
    )
    gb = GradientBoostingRegressor(
        n_estimators=max(10, int(c * 100)), max_depth=3, learning_rate=0.1, random_state=0
    )
    gb.fit(x, y, sample_weight=w * len(w) / w.sum())
    return gb.predict, gb.feature_importances_


CA_STEPS = (-0.2, -0.05, -0.01, 0.01, 0.05, 0.2)


def fit_ascent(rows: Sequence[dict[str, Any]], c: float) -> tuple[Model, np.ndarray]:
    """Direct optimisation of the metric (coordinate ascent, as RankLib's): today's final
    score plus a weight per standardised feature, every weight from 0; ``c`` passes over the
    features, each trying ``CA_STEPS`` and keeping the best move that is admissible (no block
    of ``rows`` below today's) and raises the mean of the blocks."""
    meta = META
    x_all = np.concatenate([units(r)[0] for r in rows])
    std = x_all.std(axis=0)
    std[std == 0] = 1.0
    final = FEATURES.index("final")
    base = blocks(evaluate(rows, None, meta))
    w = np.zeros(len(FEATURES))

    def scorer(v: np.ndarray) -> Model:
        coef = v / std
        return lambda x: x[:, final] + x @ coef

    best = statistics.fmean(base.values())
    for _ in range(int(c)):
        for k in range(len(FEATURES)):
            if std[k] == 1.0 and x_all[:, k].std() == 0:
                continue
            top = None
            for step in CA_STEPS:
                v = w.copy()
                v[k] += step
                b = blocks(evaluate(rows, scorer(v), meta))
                if admissible(b, base) and statistics.fmean(b.values()) > best + 1e-9:
                    best, top = statistics.fmean(b.values()), v
            if top is not None:
                w = top
    return scorer(w), w / std


META: dict[str, Any] = {}


def admissible(cand: dict[str, float], base: dict[str, float]) -> bool:
    return all(cand[k] >= base[k] for k in base)


def blended(model: Model, rows: Sequence[dict[str, Any]], lam: float) -> Model:
    """Today's final score plus ``lam`` times the model's score in units of its spread over
    ``rows``' units (a nudge to today's order; a large ``lam``: the model alone)."""
    spread = float(np.concatenate([model(units(r)[0]) for r in rows]).std()) or 1.0
    final = FEATURES.index("final")
    return lambda x: x[:, final] + lam * model(x) / spread


def configs(
    rows: Sequence[dict[str, Any]], cs: list[float], lams: list[float], fit: Any
) -> list[tuple[tuple[float, float], Model, np.ndarray]]:
    out = []
    for c in cs:
        model, coef = fit(rows, c)
        if fit is fit_ascent:  # fitted on the metric around today's score: no blend
            out.append(((c, 0.0), model, coef))
            continue
        out += [((c, lam), blended(model, rows, lam), coef) for lam in lams]
    return out


def cross_validate(
    rows: list[dict[str, Any]], meta: dict[str, Any], cs: list[float], lams: list[float], fit: Any
) -> dict[str, Any]:
    groups = sorted({r["group"] for r in rows})
    held: dict[str, list[float]] = {}
    chosen: dict[str, Any] = {}
    base_all = evaluate(rows, None, meta)
    for g in groups:
        train = [r for r in rows if r["group"] != g]
        test = [r for r in rows if r["group"] == g]
        base = blocks({k: v for k, v in base_all.items() if k != g})
        best: tuple[float, Any, Model | None] = (statistics.fmean(base.values()), None, None)
        for key, model, _ in configs(train, cs, lams, fit):
            b = blocks(evaluate(train, model, meta))
            if admissible(b, base) and statistics.fmean(b.values()) > best[0]:
                best = (statistics.fmean(b.values()), key, model)
        chosen[g] = best[1]
        held[g] = evaluate(test, best[2], meta)[g]
        print(
            f"  fold {g}: (C, lambda)={best[1]} held out {statistics.fmean(held[g]):.4f} "
            f"(today {statistics.fmean(base_all[g]):.4f})",
            flush=True,
        )
    return {
        "held_out": blocks(held),
        "chosen": chosen,
        "by_group": {g: round(statistics.fmean(v), 4) for g, v in held.items()},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dump", required=True)
    p.add_argument("--cs", default="0.001,0.01,0.1,1")
    p.add_argument("--lams", default="0.1,0.3,1,100")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--modes", default="hybrid,lexical,semantic")
    p.add_argument("--model", choices=["linear", "trees", "ascent"], default="linear")
    p.add_argument("--unit", choices=["files", "chunks"], default="files")
    p.add_argument("--lambda-weights", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    global UNIT, LAMBDA_WEIGHTS
    UNIT = args.unit
    LAMBDA_WEIGHTS = args.lambda_weights
    dump = pickle.loads(Path(args.dump).read_bytes())
    meta = dump["repo_meta"]
    cs = [float(c) for c in args.cs.split(",")]
    lams = [float(v) for v in args.lams.split(",")]
    fit = {"linear": fit_linear, "trees": fit_trees, "ascent": fit_ascent}[args.model]
    META.update(meta)
    result: dict[str, Any] = {
        "model": args.model,
        "unit": args.unit,
        "lambda_weights": args.lambda_weights,
        "top": args.top,
        "cs": cs,
        "features": FEATURES,
    }
    for mode in args.modes.split(","):
        rows = [r for r in dump["rows"] if r["mode"] == mode]
        for r in rows:
            r["x"], r["y"] = r["x"][: args.top], r["y"][: args.top]
        base = evaluate(rows, None, meta)
        entry: dict[str, Any] = {
            "today": blocks(base),
            "today_by_group": {g: round(statistics.fmean(v), 4) for g, v in base.items()},
        }
        print(mode, "today", entry["today"], flush=True)
        entry["in_sample"] = {}
        for (c, lam), model, coef in configs(rows, cs, lams, fit):
            ev = evaluate(rows, model, meta)
            entry["in_sample"][f"C={c},lambda={lam}"] = {
                "blocks": blocks(ev),
                "by_group": {g: round(statistics.fmean(v), 4) for g, v in ev.items()},
                "weights": dict(zip(FEATURES, np.round(coef, 4).tolist(), strict=True)),
            }
            print(mode, "in sample C", c, "lambda", lam, blocks(ev), flush=True)
        entry["cv"] = cross_validate(rows, meta, cs, lams, fit)
        print(mode, "held out", entry["cv"]["held_out"], flush=True)
        result[mode] = entry
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
