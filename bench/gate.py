"""A question's form as a gate on whole-file evidence (issue 36, round seven).

Round six's whole-repository import prior (``bench.centrality``'s ``file:imports_pr`` /
``file:imports_in``: a multiplier ``1 - s (1 - x_f)`` of a file's chunks, ``x_f`` its
log-scaled centrality) pays on the repositories and costs the own eval at every strength:
questions about how a part works are answered by the files the rest of the repository rests
on, questions asking for one function often by a leaf or a facade. Here that evidence, and
the ranking's own file-level knobs (``RankingConfig``: coherence, its rest share, the
per-file decay, the hollow prior, the reference boost and its length gate, the path gains),
apply **only to the questions ``bench.question_form`` calls mechanism questions** (its rule
was committed before any score of this round was seen), with today's ranking for the rest.

The gate wraps the service as ``bench.centrality`` does (``src/`` unchanged): the query's
text is caught where the service analyses it, and ``rerank`` gets the gated knobs and
``centrality``'s prior only when the text's form passes. Gates: ``all`` (no gate: round six's
figures), ``mechanism``, ``mechanism+`` (``question_form``'s second rule) and ``other``
(every question but the mechanism ones: the control; if the form separates the two kinds, a
prior helps there less than on mechanism questions and costs more).

Cross-validated as round six (leave one of the 18 groups out, admissible only if no eval
block is below today's in hybrid or lexical mode), over each family and the whole pool.

    python -m bench.gate forms --dir DIR                     # classes by eval and category
    python -m bench.gate score --dir DIR --pool prior|knobs|both [--repos a,b] --out S.json
    python -m bench.gate cv --reports A.json,B.json --out FILE
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import centrality, fit_ranker, proximity, replay_store, repo_search
from bench.file_graph import centralities, log_scaled
from bench.question_form import CLASSES, is_mechanism, question_form
from bench.retrieval import Variant, emit
from codebase_mcp_search.core.models import ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical", "semantic")
GATES = ("all", "mechanism", "mechanism+", "other")
TODAY = Variant(RankingConfig(), {})
SERVICE: Any = sys.modules["codebase_mcp_search.core.services.search.service"]
# The ranking's file-level knobs, each moved alone (today's in ``RankingConfig``'s defaults).
KNOB_MOVES: tuple[tuple[str, float], ...] = (
    ("coherence_boost", 0.0),
    ("coherence_boost", 0.1),
    ("coherence_boost", 0.3),
    ("coherence_boost", 0.4),
    ("coherence_boost", 0.6),
    ("coherence_rest_share", 0.25),
    ("coherence_rest_share", 0.5),
    ("file_decay", 0.5),
    ("file_decay", 0.85),
    ("file_decay", 1.0),
    ("hollow_prior", 0.3),
    ("hollow_prior", 0.7),
    ("hollow_prior", 1.0),
    ("reference_boost", 0.1),
    ("reference_boost", 0.4),
    ("reference_boost", 0.6),
    ("reference_max_words", 0),
    ("path_boost", 0.5),
    ("path_boost", 1.5),
    ("stem_boost", 0.25),
    ("stem_boost", 1.0),
)
PRIOR_MEASURES = ("imports_pr", "imports_in")
PRIOR_STRENGTHS = (0.1, 0.2, 0.3, 0.4, 0.5)
# ``--pool pairs``: the prior with one knob move, both for mechanism questions only. Chosen
# after the single moves were scored (each gated move admissible in sample, or raising the
# repositories' lexical figure), so only the pool's cross-validated figure counts.
PAIR_KNOBS: tuple[tuple[str, float], ...] = (
    ("coherence_boost", 0.3),
    ("coherence_boost", 0.4),
    ("file_decay", 0.5),
    ("reference_boost", 0.4),
    ("reference_max_words", 0),
)
PAIR_STRENGTHS = (0.2, 0.3, 0.4)

# What is in force: the gate, the knobs it moves, the prior (a ``centrality`` make), and the
# text of the query being searched (caught where the service analyses it).
_GATE: dict[str, Any] = {"gate": None, "knobs": {}, "make": None, "text": ""}
_ANALYSE = SERVICE.analyse_query
# ``centrality``'s wrapper of the product's ``rerank``, once ``install`` has put it there.
_INNER: dict[str, Any] = {}


@functools.lru_cache(maxsize=4096)
def passes(gate: str, text: str) -> bool:
    """Whether the question ``text`` gets the gated evidence under ``gate``."""
    if gate == "all":
        return True
    if gate == "other":
        return not is_mechanism(text)
    return is_mechanism(text, nominal=gate == "mechanism+")


def _analyse(text: str) -> Any:
    _GATE["text"] = text
    return _ANALYSE(text)


def _rerank(
    candidates: Sequence[ScoredChunk], profile: Any, config: RankingConfig, definitions: Any = ()
) -> list[ScoredChunk]:
    on = _GATE["gate"] is not None and passes(_GATE["gate"], _GATE["text"])
    if on and _GATE["knobs"]:
        config = config.model_copy(update=_GATE["knobs"])
    centrality._STATE["make"] = _GATE["make"] if on else None
    return list(_INNER["rerank"](candidates, profile, config, definitions))


def install() -> None:
    """``centrality``'s wrappers, then the gate's around them, once (see
    ``centrality.install``)."""
    if not _INNER:
        centrality.install()
        _INNER["rerank"] = SERVICE.rerank
        SERVICE.analyse_query = _analyse
        SERVICE.rerank = _rerank


def configurations(pool: str) -> list[dict[str, Any]]:
    """Today's first, then the pool's: ``prior`` (measure x strength x gate), ``knobs`` (each
    move x gate, ``other`` left out: it is the prior's control), ``pairs`` (``PAIR_KNOBS`` x
    measure x ``PAIR_STRENGTHS``, gate mechanism)."""
    out: list[dict[str, Any]] = [{"gate": None, "knobs": {}, "prior": None, "s": 0.0}]
    if pool in ("prior", "both"):
        for gate in GATES:
            for m in PRIOR_MEASURES:
                out += [{"gate": gate, "knobs": {}, "prior": m, "s": s} for s in PRIOR_STRENGTHS]
    if pool in ("knobs", "both"):
        for gate in GATES[:3]:
            out += [{"gate": gate, "knobs": {k: v}, "prior": None, "s": 0.0} for k, v in KNOB_MOVES]
    if pool == "pairs":
        out += [
            {"gate": "mechanism", "knobs": {k: v}, "prior": m, "s": s}
            for k, v in PAIR_KNOBS
            for m in PRIOR_MEASURES
            for s in PAIR_STRENGTHS
        ]
    return out


def describe(c: dict[str, Any]) -> str:
    if c["gate"] is None:
        return "today"
    what = [f"{k} {v}" for k, v in c["knobs"].items()]
    if c["prior"]:
        what.append(f"{c['prior']} {c['s']}")
    return f"{c['gate']}: {', '.join(what)}"


def _texts(data: dict[str, Any]) -> list[str]:
    return [q["query"] if isinstance(q, dict) else q[0] for q in data["queries"]]


def score(
    datas: dict[str, dict[str, Any]], configs: list[dict[str, Any]]
) -> list[dict[str, dict[str, list[float]]]]:
    """Each configuration's per-query metric, per mode and group."""
    scaled: dict[str, dict[str, Any]] = {}
    if any(c["prior"] for c in configs):
        cents = {g: centralities(d) for g, d in datas.items()}
        scaled = {m: {g: log_scaled(c[m]) for g, c in cents.items()} for m in PRIOR_MEASURES}
    results = []
    for c in configs:
        started = time.perf_counter()
        r: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
        _GATE.update(gate=c["gate"], knobs=c["knobs"])
        for g, data in datas.items():
            _GATE["make"] = (
                centrality.file_prior(scaled[c["prior"]][g], c["s"]) if c["prior"] else None
            )
            for mode, rows in asyncio.run(proximity.evaluate({g: data}, TODAY, MODES)).items():
                r[mode].update(rows)
        _GATE.update(gate=None, knobs={}, make=None)
        results.append(r)
        proximity._row({"c": describe(c)}, r, started)
    return results


def forms(datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How many questions of each eval (and each benchmark category) fall in each class."""
    by: dict[str, Counter[str]] = {}
    plus: Counter[str] = Counter()
    for g, data in datas.items():
        ev = g if g.startswith("@") else "repositories"
        for q, text in zip(data["queries"], _texts(data), strict=True):
            f = question_form(text)
            by.setdefault(ev, Counter())[f] += 1
            if not g.startswith("@"):
                by.setdefault(f"category {repo_search.category(q)}", Counter())[f] += 1
                by.setdefault(f"repository {g}", Counter())[f] += 1
            plus[ev] += is_mechanism(text, nominal=True)
    return {
        "classes": CLASSES,
        "by": {k: {f: v[f] for f in CLASSES if v[f]} for k, v in sorted(by.items())},
        "mechanism+_by_eval": dict(plus),
    }


def by_class(
    datas: dict[str, dict[str, Any]], r: dict[str, dict[str, list[float]]], gate: str
) -> dict[str, Any]:
    """Per mode and eval, the mean metric of the questions ``gate`` passes and of the rest
    (question means, over every repository's questions together), and their numbers."""
    out: dict[str, Any] = {}
    for mode in MODES:
        acc: dict[str, dict[str, list[float]]] = {}
        for g, data in datas.items():
            ev = g if g.startswith("@") else "repositories"
            for text, v in zip(_texts(data), r[mode][g], strict=True):
                side = "gated" if passes(gate, text) else "rest"
                acc.setdefault(ev, {"gated": [], "rest": []})[side].append(v)
        out[mode] = {
            ev: {
                side: [round(float(np.mean(vs)), 4) if vs else None, len(vs)]
                for side, vs in sides.items()
            }
            for ev, sides in acc.items()
        }
    return out


def below_lexical(hybrid: dict[str, float], lexical: dict[str, float]) -> dict[str, float]:
    """The repositories where hybrid is more than 0.01 below lexical."""
    return {
        g: round(hybrid[g] - lexical[g], 4)
        for g in hybrid
        if not g.startswith("@") and hybrid[g] < lexical[g] - 0.01
    }


def cross_validate(reports: list[dict[str, Any]], datas: dict[str, Any] | None) -> dict[str, Any]:
    """The pools of ``reports`` merged (today's first), cross-validated over every family
    (the configurations of one gate and kind, with today's) and the whole pool."""
    configs = list(reports[0]["configurations"])
    rows = list(reports[0]["rows"])
    for rep in reports[1:]:
        configs += rep["configurations"][1:]
        rows += rep["rows"][1:]
    groups = sorted(rows[0]["hybrid"])
    scores = fit_ranker.group_scores(rows)
    cats = reports[0]["categories"]
    families: dict[str, list[int]] = {"whole pool": list(range(len(configs)))}
    for i, c in enumerate(configs[1:], 1):
        kind = "pairs" if c["prior"] and c["knobs"] else "prior" if c["prior"] else "knobs"
        names = [f"{kind}, gate {c['gate']}", f"prior and knobs, gate {c['gate']}"]
        if kind == "prior":
            names.append(f"prior {c['prior']}, gate {c['gate']}")
        if c["prior"]:
            names.append(f"prior {c['prior']} and its pairs, gate {c['gate']}")
        for name in names:
            families.setdefault(name, [0]).append(i)
    out: dict[str, Any] = {
        "groups": groups,
        "configurations": [describe(c) for c in configs],
        "in_sample": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES})
            for i in range(len(configs))
        ],
        "in_sample_by_group": [
            {m: {g: round(float(scores[m][i][j]), 4) for j, g in enumerate(groups)} for m in MODES}
            for i in range(len(configs))
        ],
        "families": {},
    }
    if datas is not None:
        # Every configuration's figures split by the mechanism rule: where a gain or a loss is.
        out["forms"] = forms(datas)
        out["in_sample_by_mechanism"] = [by_class(datas, r, "mechanism") for r in rows]
    for name, idx in families.items():
        sub = {m: scores[m][idx] for m in MODES}
        allowed = {g: np.ones(len(idx), dtype=bool) for g in [*groups, "*"]}
        # fit_ranker's folds name a configuration by what it holds: here, its description.
        labels: list[Any] = [describe(configs[i]) for i in idx]
        cv = fit_ranker.cross_validate(
            labels,
            sub,
            groups,
            allowed,
            0,
            [rows[i] for i in idx],
            cats,
        )
        fitted = idx[labels.index(cv["fitted"])]
        held = cv["held_out_by_group"]
        cv["hybrid_below_lexical"] = {
            "held_out": below_lexical(held["hybrid"], held["lexical"]),
            "fitted": below_lexical(
                *(
                    {g: float(scores[m][fitted][j]) for j, g in enumerate(groups)}
                    for m in ("hybrid", "lexical")
                )
            ),
        }
        cv["fitted_by_group"] = out["in_sample_by_group"][fitted]
        if datas is not None and configs[fitted]["gate"]:
            cv["fitted_by_class"] = by_class(datas, rows[fitted], configs[fitted]["gate"])
            cv["today_by_class"] = by_class(datas, rows[0], configs[fitted]["gate"])
        out["families"][name] = cv
        print(
            f"{name}: held out {json.dumps(cv['held_out'])} fitted {cv['fitted']} "
            f"below {cv['hybrid_below_lexical']['held_out']}",
            flush=True,
        )
    return out


def main() -> None:
    install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("cmd", choices=["forms", "score", "cv"])
    p.add_argument("--dir", default=None)
    p.add_argument("--pool", choices=["prior", "knobs", "both", "pairs"], default="both")
    p.add_argument("--reports", default=None, help="cv: score reports to merge (today's first)")
    p.add_argument("--repos", default=None, help="only these repositories (and no CoSQA, own)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir, args.repos) if args.dir else None
    if args.cmd == "cv":
        reports = [json.loads(Path(f).read_text()) for f in args.reports.split(",")]
        result = cross_validate(reports, datas)
        if args.out:
            # One line: the raw figures of a round are kept in the repository.
            Path(args.out).write_text(json.dumps(result, separators=(",", ":")) + "\n")
        return
    if datas is None:
        p.error("--dir: the recordings of bench.replay record (all three benches)")
    if args.cmd == "forms":
        emit(forms(datas), args.out)
        return
    configs = configurations(args.pool)
    rows = score(datas, configs)
    cats = {
        g: [repo_search.category(q) for q in d["queries"]]
        for g, d in datas.items()
        if not g.startswith("@")
    }
    emit({"configurations": configs, "categories": cats, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
