"""Fit the ranking stack's weights, cross-validated by repository (issue 36).

The ranking score is a linear combination: the fused retrieval score plus weighted gains
(definition, path words, file named after a query word, file coherence, references), times
priors (test, docs, hollow chunks...), then the per-file decay. Its weights were tuned by hand;
this script fits them (and the fusion's knobs). The score is not one dot product that a pairwise logistic model could
stand in for: priors multiply it, the decay and the collapsing of duplicates act after it, and
the metrics count files and spans. So the weights are fitted on the metric itself, through the
real ``SearchService`` over the recorded retrievals of ``bench.replay`` (direct search over a
grid of weights, the coordinate-ascent family of linear learning to rank):

1. a pool of configurations (``bench.ranker_space``), fixed before any is scored: the
   hand-tuned weights (``BASE``), each weight moved alone over its grid (``SPACE``), and
   ``--configs`` random draws from the grid (seeded);
2. every configuration scores every query of the three evals in each mode (``MODES``):
   repository-benchmark NDCG@10, CoSQA and own-eval reciprocal rank;
3. the groups are the 16 dev repositories, CoSQA and the own eval. The objective over a set of
   groups is, per mode, the mean of its blocks (the repositories' mean NDCG@10, CoSQA MRR@10,
   own-eval MRR@10; each block present only if it holds a group of the set), weighed over the
   modes by ``MODES``. A configuration is admissible only if none of those blocks is below
   BASE's in the ``GUARDED`` modes (a change is adopted only if no eval is worse: without it,
   the 60 own-eval questions, a third of the objective, outweighed the repositories);
4. per fold, one round of coordinate ascent from its groups only: BASE with every weight that,
   moved alone, is admissible and raises the objective set to its best value (scored too);
5. leave one group out: for each group, the admissible configuration best on the other 17
   (among the pool and that fold's own coordinate step) is scored on the one held out. The
   held-out figures (each repository, CoSQA, the own eval, as scored by a configuration
   chosen without it) are the estimate to report; the fitted one (chosen on all 18 groups,
   the one shipped in ``core.defaults``) is in-sample.

    python -m bench.replay record --bench repo|cosqa|own --out DIR   # once each, one DIR
    python -m bench.fit_ranker --dir DIR [--configs 40] [--seed 0] [--workers 2] [--out FILE]
        [--reference DIR] [--widen]

``--reference DIR``: recordings of another index of the same benches (round six: ``DIR`` embedded
with a path header, ``--reference`` today's plain vectors; ``bench.replay record --context``).
BASE is scored on them too, and the cross-validation is run twice: guarded by BASE on ``DIR``
(as without it), and guarded by BASE on the reference, which each fold may also choose (keep
today's index): a fold adopts ``DIR``'s vectors only with a configuration worse than today's
on no block. ``--widen``: the path gains' grids reach 0, and ``vec.path_boost`` /
``vec.stem_boost`` set them for the modes that rank by vectors (hybrid, semantic) apart from
lexical mode (None: the shared weight), since vectors embedded with their path already hold
what those gains add. ``--lexical-only`` (round ten): lexical mode's own weights, the
objective and the guard lexical mode's alone, the fusion's weights left out of the grid
(``ranker_space.lexical_only``).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from bench import replay, repo_search
from bench.ranker_space import BASE, key, lexical_only, pool, variant, widen
from bench.retrieval import emit

# Weight of each mode in the objective: hybrid is the default, lexical serves every project
# without a model, semantic is asked for by name.
MODES: dict[str, float] = {"hybrid": 1.0, "lexical": 1.0, "semantic": 0.5}
# Modes in which a chosen configuration may be worse than BASE on no eval.
GUARDED: tuple[str, ...] = ("hybrid", "lexical")

_DATA: dict[str, Any] = {}


def _load(directory: str) -> None:
    d = Path(directory)
    _DATA["repo"] = {f.stem[5:]: pickle.loads(f.read_bytes()) for f in sorted(d.glob("repo_*.pkl"))}
    for name in ("cosqa", "own"):
        f = d / f"{name}.pkl"
        _DATA[name] = pickle.loads(f.read_bytes()) if f.exists() else None


def _rr(ranks: list[int | None]) -> list[float]:
    return [1.0 / r if r and r <= 10 else 0.0 for r in ranks]


def evaluate(config: dict[str, float | None]) -> dict[str, dict[str, list[float]]]:
    """Per mode, per group: each query's NDCG@10 (a repository) or reciprocal rank."""

    async def run() -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {}
        for mode in MODES:
            v = variant(config, mode)
            groups: dict[str, list[float]] = {}
            for repo, data in _DATA["repo"].items():
                groups[repo] = [r["ndcg"] for r in await replay.score_repo(data, v, mode)]
            if _DATA["cosqa"] is not None:
                groups["@cosqa"] = _rr(await replay.score_cosqa(_DATA["cosqa"], v, mode))
            if _DATA["own"] is not None:
                groups["@own"] = _rr(await replay.score_own(_DATA["own"], v, mode))
            out[mode] = groups
        return out

    return asyncio.run(run())


def group_scores(results: list[dict[str, dict[str, list[float]]]]) -> dict[str, np.ndarray]:
    """Per mode, a (configurations x groups) array of each group's mean metric."""
    groups = sorted(results[0][next(iter(MODES))])
    return {
        mode: np.array([[float(np.mean(r[mode][g])) for g in groups] for r in results])
        for mode in MODES
    }


def objective(scores: dict[str, np.ndarray], groups: list[str], keep: np.ndarray) -> np.ndarray:
    """Each configuration's objective over the groups where ``keep`` is true (see the
    module docstring)."""
    repo = np.array([not g.startswith("@") for g in groups]) & keep
    total = np.zeros(next(iter(scores.values())).shape[0])
    for mode, weight in MODES.items():
        s = scores[mode]
        blocks = []
        if repo.any():
            blocks.append(s[:, repo].mean(axis=1))
        for i, g in enumerate(groups):
            if g.startswith("@") and keep[i]:
                blocks.append(s[:, i])
        total += weight * np.mean(blocks, axis=0)
    return total / sum(MODES.values())


def summary(groups: list[str], row: dict[str, np.ndarray]) -> dict[str, Any]:
    """The three evals' figures, per mode, of one score per group (``row``: mode -> array)."""
    repo = np.array([not g.startswith("@") for g in groups])
    out: dict[str, Any] = {}
    for mode in MODES:
        r = row[mode]
        out[mode] = {
            "repo_ndcg@10": round(float(r[repo].mean()), 4),
            "cosqa_mrr@10": round(float(r[groups.index("@cosqa")]), 4)
            if "@cosqa" in groups
            else None,
            "own_mrr@10": round(float(r[groups.index("@own")]), 4) if "@own" in groups else None,
        }
    return out


def by_category(
    per_query: dict[str, dict[str, list[float]]], cats: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    """Per mode, the repository benchmark's figure by category (each category's mean over the
    repositories asking it, of each repository's mean, as ``bench.repo_search`` reports it);
    ``per_query``: mode -> repository -> each query's NDCG@10."""
    out: dict[str, dict[str, float]] = {}
    for mode, repos in per_query.items():
        means: dict[str, list[float]] = {}
        for repo, values in repos.items():
            per: dict[str, list[float]] = {}
            for c, v in zip(cats[repo], values, strict=True):
                per.setdefault(c, []).append(v)
            for c, vs in per.items():
                means.setdefault(c, []).append(float(np.mean(vs)))
        out[mode] = {c: round(float(np.mean(v)), 4) for c, v in sorted(means.items())}
    return out


def admissible(
    scores: dict[str, np.ndarray], groups: list[str], keep: np.ndarray, ref: int = 0
) -> np.ndarray:
    """Which configurations are worse than the base (row ``ref``) on none of the blocks of the
    groups where ``keep`` is true, in the ``GUARDED`` modes (a change is adopted only if it
    is worse on no eval)."""
    repo = np.array([not g.startswith("@") for g in groups]) & keep
    ok = np.ones(next(iter(scores.values())).shape[0], dtype=bool)
    for mode in GUARDED:
        s = scores[mode]
        blocks = [s[:, repo].mean(axis=1)] if repo.any() else []
        blocks += [s[:, i] for i, g in enumerate(groups) if g.startswith("@") and keep[i]]
        for b in blocks:
            ok &= b >= b[ref] - 1e-9
    return ok


def choose(
    scores: dict[str, np.ndarray],
    groups: list[str],
    keep: np.ndarray,
    allowed: np.ndarray,
    ref: int = 0,
) -> int:
    """The admissible allowed configuration with the best objective over ``keep``."""
    value = objective(scores, groups, keep)
    value[~(allowed & admissible(scores, groups, keep, ref))] = -np.inf
    return int(np.argmax(value))


def combination(
    configs: list[dict[str, float | None]],
    scores: dict[str, np.ndarray],
    groups: list[str],
    keep: np.ndarray,
) -> dict[str, float | None]:
    """One round of coordinate ascent: BASE with every weight moved alone to its best value,
    when that move is admissible and beats BASE over ``keep`` (configurations 1.. of the pool
    move one weight each)."""
    value = objective(scores, groups, keep)
    ok = admissible(scores, groups, keep)
    best: dict[str, tuple[float, float | None]] = {}
    for i, c in enumerate(configs):
        moved = [k for k in BASE if c.get(k) != BASE[k]]
        if len(moved) != 1 or not ok[i] or value[i] <= value[0]:
            continue
        (name,) = moved
        if name not in best or value[i] > best[name][0]:
            best[name] = (float(value[i]), c[name])
    return {**BASE, **{name: v for name, (_, v) in best.items()}}


def cross_validate(
    configs: list[dict[str, float | None]],
    scores: dict[str, np.ndarray],
    groups: list[str],
    allowed: dict[str, np.ndarray],
    ref: int = 0,
    rows: list[dict[str, dict[str, list[float]]]] | None = None,
    cats: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Leave one group out (``allowed[group]``: the configurations fold may choose from; the
    fitted one, ``allowed["*"]``, uses every group; row ``ref`` the guard's base); the
    held-out figures."""
    n = len(groups)
    held = {mode: np.zeros(n) for mode in MODES}
    chosen: dict[str, dict[str, float | None]] = {}
    held_rows: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    for i, g in enumerate(groups):
        keep = np.ones(n, dtype=bool)
        keep[i] = False
        best = choose(scores, groups, keep, allowed[g], ref)
        chosen[g] = configs[best]
        for mode in MODES:
            held[mode][i] = scores[mode][best, i]
            if rows is not None and not g.startswith("@"):
                held_rows[mode][g] = rows[best][mode][g]
    fitted = choose(scores, groups, np.ones(n, dtype=bool), allowed["*"], ref)
    extra: dict[str, Any] = {}
    if rows is not None and cats is not None:
        repos = [g for g in groups if not g.startswith("@")]

        def cat(row: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
            return by_category({m: {g: row[m][g] for g in repos} for m in MODES}, cats)

        extra = {
            "held_out_by_category": by_category(held_rows, cats),
            "fitted_by_category": cat(rows[fitted]),
            "base_by_category": cat(rows[ref]),
        }
    return {
        "held_out": summary(groups, held),
        "held_out_by_group": {
            mode: {g: round(float(held[mode][i]), 4) for i, g in enumerate(groups)}
            for mode in MODES
        },
        "chosen_by_fold": chosen,
        "fitted": configs[fitted],
        "fitted_in_sample": summary(groups, {m: scores[m][fitted] for m in MODES}),
        "base_in_sample": summary(groups, {m: scores[m][ref] for m in MODES}),
        **extra,
    }


def _score_all(
    configs: list[dict[str, float | None]],
    done: dict[str, Any],
    args: argparse.Namespace,
    directory: str | None = None,
) -> None:
    """Score ``configs`` on ``directory``'s recordings (``--dir``), cached in ``done`` under
    their key (prefixed with ``ref:`` for the reference recordings)."""
    prefix = f"ref:{directory}:" if directory else ""
    todo = list({prefix + key(c): c for c in configs if prefix + key(c) not in done}.items())
    print(f"{len(configs)} configurations, {len(todo)} to score", flush=True)
    if not todo:
        return
    with multiprocessing.get_context("fork").Pool(
        args.workers, initializer=_load, initargs=(directory or args.dir,)
    ) as workers:
        results = workers.imap(evaluate, [c for _, c in todo])
        for i, ((name, _), r) in enumerate(zip(todo, results, strict=True)):
            done[name] = r
            print(f"  {i + 1}/{len(todo)}", flush=True)
            if args.cache:
                Path(args.cache).write_bytes(pickle.dumps(done))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", default="/tmp/exp19/rec")
    p.add_argument("--configs", type=int, default=40, help="random draws besides the grid")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cache", default=None, help="pickle of scored configurations to reuse")
    p.add_argument("--out", default=None)
    p.add_argument("--reference", default=None, help="recordings of today's index (see above)")
    p.add_argument("--widen", action="store_true", help="round six's grid of the path gains")
    p.add_argument(
        "--lexical-only",
        action="store_true",
        help="fit lexical mode's own weights (round ten): the objective and the guard are "
        "lexical mode's, the fusion's weights left out",
    )
    args = p.parse_args()
    if args.widen:
        widen()
    if args.lexical_only:
        global GUARDED
        lexical_only()
        MODES.clear()
        MODES["lexical"] = 1.0
        GUARDED = ("lexical",)
    configs = pool(args.configs, args.seed)
    done: dict[str, Any] = {}
    if args.cache and Path(args.cache).exists():
        done = pickle.loads(Path(args.cache).read_bytes())
    _score_all(configs, done, args)
    groups = sorted(done[key(configs[0])][next(iter(MODES))])
    scores = group_scores([done[key(c)] for c in configs])
    # Each fold's round of coordinate ascent, from its own groups only.
    n = len(groups)
    folds = {g: np.arange(n) != i for i, g in enumerate(groups)}
    folds["*"] = np.ones(n, dtype=bool)
    combos = {g: combination(configs, scores, groups, keep) for g, keep in folds.items()}
    extra = list({key(c): c for c in combos.values()}.values())
    _score_all(extra, done, args)
    everything = configs + extra
    scores = group_scores([done[key(c)] for c in everything])
    allowed = {
        g: np.array([True] * len(configs) + [key(c) == key(combos[g]) for c in extra])
        for g in folds
    }
    rows = [done[key(c)] for c in everything]
    cats = {
        f.stem[5:]: [repo_search.category(q) for q in pickle.loads(f.read_bytes())["queries"]]
        for f in sorted(Path(args.dir).glob("repo_*.pkl"))
    }
    report = {
        "groups": groups,
        "configurations": len(everything),
        **cross_validate(everything, scores, groups, allowed, rows=rows, cats=cats),
    }
    if args.reference:
        # Row 0: BASE over today's index, the guard; each fold may keep it (adopt nothing).
        _score_all([BASE], done, args, args.reference)
        rows = [done[f"ref:{args.reference}:" + key(BASE)], *rows]
        today: dict[str, float | None] = {"@reference": None}
        report["reference"] = {
            "dir": args.reference,
            **cross_validate(
                [today, *everything],
                group_scores(rows),
                groups,
                {g: np.concatenate(([True], a)) for g, a in allowed.items()},
                rows=rows,
                cats=cats,
            ),
        }
    emit(report, args.out)


if __name__ == "__main__":
    main()
