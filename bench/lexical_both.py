"""Lexical mode with both pieces of index-level evidence (issue 36, round six).

Round six measured two pieces of evidence on their own: the import graph's whole-repository
file prior (``bench.centrality``'s ``file:imports_in`` / ``file:imports_pr``: a multiplier
``1 - s (1 - x_f)`` of a file's chunks, ``x_f`` its log-scaled centrality), which pays on the
repositories and costs the own eval in hybrid mode at every strength; and stems at query time
(``bench.query_stems``), admissible in lexical mode only. Here both are applied **in lexical
mode only** (hybrid and semantic keep today's lists and ranking), alone and together: the
stems change the lexical list (``query_stems.rebuild``), the prior the ranking
(``centrality``'s wrapped ``rerank._prior``), through the real ``SearchService``.

Every configuration is a (stems, prior) pair; the first is today's. Hybrid and semantic are
scored once, with today's lists and no prior, and stand for every configuration. Cross-
validated as before (leave one of the 18 groups out; admissible only if no eval block, the
repositories' mean, CoSQA or the own eval, is below today's in hybrid or lexical mode) over
several pools: the prior alone, the stems alone, every pair (and by stemmer, by measure, up
to 0.3), and the prior on the ``--on`` stems, guarded by today's and by those stems.

    python -m bench.lexical_both --dir DIR [--stems none,snowball:1.25:sum,...]
        [--measures imports_in,imports_pr] [--strengths 0.05,0.1,...]
        [--on snowball:1.25:sum] [--out FILE]

Snowball is not a dependency: ``pip install --target DIR snowballstemmer``, DIR on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import numpy as np

from bench import centrality, fit_ranker, proximity, replay_store
from bench.file_graph import centralities, log_scaled
from bench.query_stems import Index, QueryStems, rebuild
from bench.retrieval import Variant, emit
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical", "semantic")
TODAY = Variant(RankingConfig(), {})


def _lexical(datas: dict[str, dict[str, Any]], priors: dict[str, Any] | None) -> dict[str, Any]:
    """Each group's per-query lexical metric, ``priors[group]`` (a ``centrality`` make) in force."""
    out: dict[str, list[float]] = {}
    for g, data in datas.items():
        centrality._STATE["make"] = priors[g] if priors else None
        out.update(asyncio.run(proximity.evaluate({g: data}, TODAY, ("lexical",)))["lexical"])
    centrality._STATE["make"] = None
    return out


def score(
    datas: dict[str, dict[str, Any]],
    stems: list[str],
    measures: list[str],
    strengths: list[float],
) -> tuple[list[dict[str, Any]], dict[str, np.ndarray], list[str], dict[str, Any]]:
    """Every (stems, prior) pair in lexical mode; today's hybrid and semantic beside each."""
    cents = {g: centralities(d) for g, d in datas.items()}
    scaled = {m: {g: log_scaled(c[m]) for g, c in cents.items()} for m in measures}
    base = asyncio.run(proximity.evaluate(datas, TODAY, ("hybrid", "semantic")))
    priors: list[tuple[str, float]] = [("none", 0.0)] + [
        (m, s) for m in measures for s in strengths
    ]
    configs: list[dict[str, Any]] = []
    lexical_rows: list[dict[str, list[float]]] = []
    indexes: dict[tuple[str, str | None], Index] = {}
    for name in stems:
        qs = QueryStems.parse(name)
        started = time.perf_counter()
        if qs.stemmer is None:
            rebuilt = datas
        else:
            for g, d in datas.items():
                if (g, qs.stemmer) not in indexes:
                    indexes[(g, qs.stemmer)] = Index(d, qs.stemmer)
            rebuilt = {g: rebuild(d, qs, indexes[(g, qs.stemmer)]) for g, d in datas.items()}
        print(f"stems {name}: lists rebuilt ({time.perf_counter() - started:.0f} s)", flush=True)
        for m, s in priors:
            started = time.perf_counter()
            makes = (
                {g: centrality.file_prior(scaled[m][g], s) for g in datas} if m != "none" else None
            )
            lexical_rows.append(_lexical(rebuilt, makes))
            configs.append({"stems": name, "prior": m, "s": s})
            r = {
                "hybrid": base["hybrid"],
                "lexical": lexical_rows[-1],
                "semantic": base["semantic"],
            }
            proximity._row(configs[-1], r, started)
    groups = sorted(base["hybrid"])
    results = [
        {"hybrid": base["hybrid"], "lexical": lex, "semantic": base["semantic"]}
        for lex in lexical_rows
    ]
    return configs, fit_ranker.group_scores(results), groups, base


def _cv(
    configs: list[dict[str, Any]],
    scores: dict[str, np.ndarray],
    groups: list[str],
    rows: list[int],
    ref: int = 0,
) -> dict[str, Any]:
    """The pool ``rows`` cross-validated, guarded by its row ``ref`` (today's unless said)."""
    sub = {m: scores[m][rows] for m in MODES}
    allowed = {g: np.ones(len(rows), dtype=bool) for g in [*groups, "*"]}
    cv = fit_ranker.cross_validate([configs[i] for i in rows], sub, groups, allowed, ref)
    ok = fit_ranker.admissible(sub, groups, np.ones(len(groups), dtype=bool), ref)
    cv["guard"] = configs[rows[ref]]
    cv["admissible_in_sample"] = int(ok.sum()) - 1
    return cv


def by_repository(
    groups: list[str], today: dict[str, np.ndarray], lexical: dict[str, float]
) -> dict[str, Any]:
    """Per repository: today's hybrid and lexical, and ``lexical`` (the change's); and the
    repositories where hybrid is more than 0.01 below lexical, today and with the change."""
    repos = [g for g in groups if not g.startswith("@")]
    hyb = {g: float(today["hybrid"][groups.index(g)]) for g in repos}
    lex0 = {g: float(today["lexical"][groups.index(g)]) for g in repos}
    return {
        "by_repository": {
            g: {
                "hybrid": round(hyb[g], 4),
                "lexical_today": round(lex0[g], 4),
                "lexical": round(lexical[g], 4),
            }
            for g in repos
        },
        "hybrid_below_lexical_today": {
            g: round(hyb[g] - lex0[g], 4) for g in repos if hyb[g] < lex0[g] - 0.01
        },
        "hybrid_below_lexical": {
            g: round(hyb[g] - lexical[g], 4) for g in repos if hyb[g] < lexical[g] - 0.01
        },
    }


def main() -> None:
    centrality.install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument(
        "--stems",
        default="none,snowball:1:sum,snowball:1.25:sum,snowball:1.5:sum,snowball:1.25,light+:1.25:sum,"
        "light+:1.5:sum",
    )
    p.add_argument("--measures", default="imports_in,imports_pr")
    p.add_argument("--strengths", default="0.05,0.1,0.15,0.2,0.25,0.3,0.4,0.5")
    p.add_argument("--on", default="snowball:1.25:sum", help="the stems the prior is put on")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir)
    stems = args.stems.split(",")
    if stems[0] != "none":
        p.error("--stems: today's (none) first")
    configs, scores, groups, _ = score(
        datas, stems, args.measures.split(","), [float(s) for s in args.strengths.split(",")]
    )
    every = list(range(len(configs)))
    no_stems = [i for i, c in enumerate(configs) if c["stems"] == "none"]
    no_prior = [i for i, c in enumerate(configs) if c["prior"] == "none"]
    on = [i for i, c in enumerate(configs) if c["stems"] == args.on]  # its no-prior row first
    pools: dict[str, list[int]] = {
        "prior alone (a)": no_stems,
        "stems alone": no_prior,
        "stems and prior, every pair (b)": every,
        "stems and prior, strengths up to 0.3": [i for i in every if configs[i]["s"] <= 0.3],
        f"the prior on {args.on}": [0, *on],
        # Guarded by the stems (as if adopted first): is the prior worth adding on top?
        f"the prior on {args.on}, guard: {args.on}": on,
    }
    for st in dict.fromkeys(n.split(":")[0] for n in stems[1:]):
        pools[f"stems and prior, {st} only"] = [
            i for i in every if configs[i]["stems"].split(":")[0] in ("none", st)
        ]
    for m in args.measures.split(","):
        pools[f"prior alone, {m}"] = [0, *(i for i in no_stems if configs[i]["prior"] == m)]
        pools[f"stems and prior, {m}"] = [i for i in every if configs[i]["prior"] in ("none", m)]
    report: dict[str, Any] = {
        "groups": groups,
        "configurations": configs,
        "today_by_group": {
            m: {g: round(float(scores[m][0][j]), 4) for j, g in enumerate(groups)} for m in MODES
        },
        "by_configuration": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES})["lexical"] for i in every
        ],
        "by_configuration_and_group": [
            {g: round(float(scores["lexical"][i][j]), 4) for j, g in enumerate(groups)}
            for i in every
        ],
        "pools": {},
    }
    today = {m: scores[m][0] for m in MODES}
    for name, rows in pools.items():
        cv = _cv(configs, scores, groups, rows)  # guard: the pool's first row
        fitted = rows[[configs[i] for i in rows].index(cv["fitted"])]
        cv["held_out_by_repository"] = by_repository(
            groups, today, cv["held_out_by_group"]["lexical"]
        )
        cv["fitted_by_repository"] = by_repository(
            groups, today, {g: float(scores["lexical"][fitted][j]) for j, g in enumerate(groups)}
        )
        report["pools"][name] = cv
        print(
            name,
            cv["held_out"]["lexical"],
            "fitted",
            cv["fitted"],
            "hybrid < lexical - 0.01 (held out):",
            cv["held_out_by_repository"]["hybrid_below_lexical"],
            flush=True,
        )
    emit(report, args.out)


if __name__ == "__main__":
    main()
