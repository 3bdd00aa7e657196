"""Pseudo-relevance feedback: the query expanded from the search's own first results (issue 36,
round seven).

A question says in prose what code says with identifiers; the lexical list sees only the
question's words. The classic remedy is query expansion from the first results (RM3 and its
kin): take the top ``k`` chunks of a first list, pick the ``m`` terms of the product's analyser
(identifier subwords, as the lexical index holds them: ``lexical.document_terms``) with the
highest weight, the sum of their frequency in those chunks times their idf (the question's own
terms left out; ties by term), and run a second BM25 with the question's terms at weight 1 and
the expansion terms at ``w`` times their BM25 contribution. Three forms (``Feedback``):

- ``lex``: from the first lexical list's top ``k`` (lexical mode and hybrid use the second
  list);
- ``sem``: from the semantic list's top ``k`` (the model's neighbours carry the code's
  vocabulary), feeding the lexical list hybrid fuses (lexical mode, which has no query
  vector, keeps today's list);
- ``roc`` (Rocchio, lexical to dense): the query vector plus ``w`` times the mean unit vector
  of the top ``k`` lexical chunks, searched again as the memory store searches (hybrid and
  semantic mode; the chunk vectors from the recording's caches, ``--vectors``).

The second list is built as ``bench.lexical_fields`` rebuilds a list (the memory store's BM25
over every chunk of the recording, today's ``FIELDS``; with no expansion term it is every
recorded list exactly, and each recorded semantic list comes back from its query vector,
``--check``), normalised by the bound of every term it asks for (an expansion term counts
``w x idf x (k1 + 1)``; ``:q`` the question's terms alone), and scored through the real
``SearchService`` with the default ranking, each form in the modes it changes. Cross-validated
as the earlier rounds (leave one of the 18 groups out; admissible only if no eval block is
below today's in hybrid or lexical mode) over pools of (hybrid, lexical-mode[, semantic-mode])
lists: the objective sums the modes and the guard is per mode, so each mode's list is chosen
on its own.

Two CoSQA questions share their analysed terms (and so one recorded lexical list) with another
question; under ``sem`` their list is expanded from the first one's semantic list.

    python -m bench.prf --dir DIR [--vectors CACHE_DIR] --check
    python -m bench.prf --dir DIR --vectors CACHE_DIR [--sources lex,sem,roc] [--ks 3,5,10]
        [--ms 5,10,20] [--ws 0.05,0.1,0.2,0.5] [--roc-ks 3,5,10] [--roc-bs 0.1,0.25,0.5,1]
        [--bounds all,q] [--repos a,@own] [--cache FILE] [--out FILE]
    python -m bench.prf --dir DIR --cost lex:5:10:0.2,sem:5:10:0.2
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import fit_ranker, lexical_fields, lexical_stems, proximity, replay_store, repo_search
from bench.lexical_both import by_repository
from bench.prf_lists import Feedback, Index, feedback_chunks, rebuild
from bench.retrieval import Variant, emit
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical", "semantic")
TODAY = Variant(RankingConfig(), {})


def check(datas: dict[str, dict[str, Any]], vectors: dict[str, dict[str, Any]] | None) -> None:
    """A second list without expansion terms (``w`` 0, through ``Index.search``) is today's;
    with ``vectors``, every semantic list searched again from its query vector is too."""
    indexes = {g: Index(d, (vectors or {}).get(g)) for g, d in datas.items()}
    for g, index in indexes.items():
        if index.vectors is None:
            continue
        for (vector, filters), (hits, total) in datas[g]["vector"].items():
            got = index.vectors.search(index.by_id, list(vector), filters, len(hits))
            same = [(h.chunk.id, h.score) for h in hits] == [(h.chunk.id, h.score) for h in got[0]]
            if not same or got[1] != total:
                raise SystemExit(f"{g}: a semantic list differs")
        print("semantic lists reproduced", g, flush=True)

    def unexpanded(d: dict[str, Any]) -> dict[str, Any]:
        index = next(indexes[g] for g, x in datas.items() if x is d)
        lists = {}
        for key in d["lexical"]:
            raw, bound = index.search(key[0], [], 0.0)
            lists[key] = lexical_fields.ranked(raw, bound, index.by_id, key[1])
        return {**d, "lexical": lists}

    lexical_fields.check(datas, unexpanded)


def _rows(
    datas: dict[str, dict[str, Any]], modes: tuple[str, ...]
) -> dict[str, dict[str, list[float]]]:
    return asyncio.run(proximity.evaluate(datas, TODAY, modes))


def load_vectors(directory: str, groups: list[str]) -> dict[str, dict[str, Any]]:
    """Each group's chunk vectors (content hash -> vector) from the caches of the recording's
    ``bench.replay record`` (``repo_search_onnx_<repo>.npz``, ``replay_onnx_cosqa.npz``,
    ``replay_onnx_own_*.npz``)."""
    out: dict[str, dict[str, Any]] = {}
    for g in groups:
        name = {"@cosqa": "replay_onnx_cosqa", "@own": "replay_onnx_own_*"}.get(
            g, f"repo_search_onnx_{g}"
        )
        out[g] = {}
        for f in sorted(Path(directory).glob(name + ".npz")):
            z = np.load(f)
            out[g].update(zip(z["hashes"], z["vectors"], strict=True))
    return out


# The modes each source changes: semantic mode reads no lexical list, lexical mode has no
# query vector (so ``sem`` and ``roc`` leave it as today's).
CHANGED = {"lex": ("hybrid", "lexical"), "sem": ("hybrid",), "roc": ("hybrid", "semantic")}


def score(
    datas: dict[str, dict[str, Any]],
    names: list[str],
    vectors: dict[str, dict[str, Any]] | None = None,
    cache: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, dict[str, list[float]]]]]:
    """Per-query metrics of every feedback configuration of ``names`` (today's first, in every
    mode), in the modes its source changes (``CHANGED``; the others today's); each kept in
    ``cache`` (a pickle, name -> metrics) as it is scored, and taken from it when there."""
    done: dict[str, Any] = (
        pickle.loads(Path(cache).read_bytes()) if cache and Path(cache).exists() else {}
    )
    indexes = {g: Index(d, (vectors or {}).get(g)) for g, d in datas.items()}
    configs: list[dict[str, Any]] = []
    rows: list[dict[str, dict[str, list[float]]]] = []
    for i, name in enumerate(names):
        started = time.perf_counter()
        fb = Feedback.parse(name)
        if name not in done:
            rebuilt = {g: rebuild(d, fb, indexes[g]) for g, d in datas.items()}
            done[name] = _rows(rebuilt, MODES if i == 0 else CHANGED[fb.source or "lex"])
            if cache:
                Path(cache).write_bytes(pickle.dumps(done))
        r = dict(done[name])
        for m in MODES:
            r.setdefault(m, rows[0][m] if rows else {})
        configs.append({"feedback": name})
        rows.append(r)
        proximity._row(configs[-1], r, started)
    return configs, rows


def cost(datas: dict[str, dict[str, Any]], names: list[str], rounds: int = 3) -> dict[str, Any]:
    """ms per search of today's BM25 and of each feedback's second search (the expansion
    terms picked from the feedback chunks' terms, then the weighted BM25 and its ranked
    list), as the memory store computes them (plain Python dicts), best of ``rounds``; and
    the mean postings each reads. ``lex`` and ``sem`` only."""
    if any(n.startswith("roc") for n in names):
        raise SystemExit("--cost: lex and sem feedback only")
    per: dict[str, dict[str, float]] = {n: {} for n in ["none", *names]}
    read: dict[str, list[int]] = {n: [] for n in per}
    for group, data in datas.items():
        index = Index(data)
        best = dict.fromkeys(per, float("inf"))
        for r in range(rounds):
            for name in per:
                fb = Feedback.parse(name)
                started = time.perf_counter()
                for key in data["lexical"]:
                    extra = (
                        index.expansion(key[0], feedback_chunks(data, index, key, fb), fb.m)
                        if fb.source
                        else []
                    )
                    raw, bound = index.search(key[0], extra, fb.w, fb.bound)
                    lexical_fields.ranked(raw, bound, index.by_id, key[1])
                    if r == 0:
                        asked = dict.fromkeys([*key[0], *extra])
                        read[name].append(sum(len(index.postings.get(t, ())) for t in asked))
                best[name] = min(best[name], time.perf_counter() - started)
        for name, ms in per.items():
            ms[group] = best[name] / len(data["lexical"]) * 1e3
    return {
        n: {
            "repo_ms": round(float(np.mean([v for g, v in per[n].items() if g[0] != "@"])), 3),
            "cosqa_ms": round(per[n].get("@cosqa", float("nan")), 3),
            "own_ms": round(per[n].get("@own", float("nan")), 3),
            "postings_read_mean": round(float(np.mean(read[n])), 1),
        }
        for n in per
    }


def _pool(
    configs: list[dict[str, Any]],
    rows: list[dict[str, dict[str, list[float]]]],
    groups: list[str],
    cats: dict[str, list[str]],
    pairs: list[tuple[int, ...]],
) -> dict[str, Any]:
    """Cross-validate the (hybrid row, lexical-mode row[, semantic-mode row]) ``pairs``
    (today's, (0, 0), first); semantic mode goes with the hybrid row unless named (today's
    but for ``roc``)."""
    triples = [(p[0], p[1], p[2] if len(p) > 2 else p[0]) for p in pairs]
    merged = [
        {
            "hybrid": rows[h]["hybrid"],
            "lexical": rows[x]["lexical"],
            "semantic": rows[s]["semantic"],
        }
        for h, x, s in triples
    ]
    named = [
        {
            "hybrid": configs[h]["feedback"],
            "lexical": configs[x]["feedback"],
            "semantic": configs[s]["feedback"],
        }
        for h, x, s in triples
    ]
    scores = fit_ranker.group_scores(merged)
    allowed = {g: np.ones(len(pairs), dtype=bool) for g in [*groups, "*"]}
    cv = fit_ranker.cross_validate(named, scores, groups, allowed, 0, merged, cats)
    ok = fit_ranker.admissible(scores, groups, np.ones(len(groups), dtype=bool))
    cv["admissible_in_sample"] = int(ok.sum()) - 1
    today = {m: scores[m][0] for m in MODES}
    fitted = named.index(cv["fitted"])
    for kind, lex, hyb in (
        ("held_out", cv["held_out_by_group"]["lexical"], cv["held_out_by_group"]["hybrid"]),
        (
            "fitted",
            {g: float(scores["lexical"][fitted][j]) for j, g in enumerate(groups)},
            {g: float(scores["hybrid"][fitted][j]) for j, g in enumerate(groups)},
        ),
    ):
        rep = by_repository(groups, today, lex)
        for g, row in rep["by_repository"].items():
            row["hybrid_changed"] = round(hyb[g], 4)
        rep["hybrid_below_lexical"] = {
            g: round(hyb[g] - lex[g], 4) for g in rep["by_repository"] if hyb[g] < lex[g] - 0.01
        }
        cv[f"{kind}_by_repository"] = rep
    return cv


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--sources", default="lex,sem,roc")
    p.add_argument("--ks", default="3,5,10")
    p.add_argument("--ms", default="5,10,20")
    p.add_argument("--ws", default="0.05,0.1,0.2,0.5")
    p.add_argument("--roc-ks", default="3,5,10")
    p.add_argument("--roc-bs", default="0.1,0.25,0.5,1")
    p.add_argument("--vectors", default=None, help="the recording's vector caches (roc)")
    p.add_argument("--cache", default=None, help="a pickle of the scored configurations")
    p.add_argument("--bounds", default="all", help="all, q or all,q (see Feedback.bound)")
    p.add_argument("--check", action="store_true", help="only check w = 0 is today's lists")
    p.add_argument("--cost", default=None, help="time these feedbacks (lex:5:10:0.2,...)")
    p.add_argument("--repos", default=None, help="a subset of the groups, to develop on")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir, args.repos)
    vectors = load_vectors(args.vectors, list(datas)) if args.vectors else None
    if args.check:
        check(datas, vectors)
        return
    if args.cost:
        emit(cost(datas, args.cost.split(",")), args.out)
        return
    names = ["none"] + [
        f"{s}:{k}:{m}:{w}" + (":q" if b == "q" else "")
        for b in args.bounds.split(",")
        for s in args.sources.split(",")
        if s != "roc"
        for k in args.ks.split(",")
        for m in args.ms.split(",")
        for w in args.ws.split(",")
    ]
    if "roc" in args.sources.split(","):
        names += [f"roc:{k}:{b}" for k in args.roc_ks.split(",") for b in args.roc_bs.split(",")]
    configs, rows = score(datas, names, vectors, args.cache)
    groups = sorted(rows[0]["hybrid"])
    cats = {
        g: [repo_search.category(q) for q in d["queries"]]
        for g, d in datas.items()
        if not g.startswith("@")
    }
    scores = fit_ranker.group_scores(rows)
    lex = [i for i, c in enumerate(configs) if c["feedback"].startswith("lex:")]
    sem = [i for i, c in enumerate(configs) if c["feedback"].startswith("sem:")]
    roc = [i for i, c in enumerate(configs) if c["feedback"].startswith("roc:")]

    def product(hybrid: list[int], lexical: list[int]) -> list[tuple[int, ...]]:
        return [(h, x) for h in [0, *hybrid] for x in [0, *lexical]]

    pools: dict[str, list[tuple[int, ...]]] = {
        "(a) lexical feedback, every mode": [(0, 0), *((i, i) for i in lex)],
        "(a) lexical feedback, lexical mode only": product([], lex),
        "(a) lexical feedback, hybrid only": product(lex, []),
        "(b) semantic feedback, hybrid": product(sem, []),
        "(c) Rocchio, hybrid (and semantic mode)": product(roc, []),
        # Semantic mode is not guarded: the pool is chosen on its objective alone.
        "(c) Rocchio, semantic mode only": [(0, 0, 0), *((0, 0, i) for i in roc)],
        "(a) or (b) in hybrid, (a) in lexical mode": product(lex + sem, lex),
        "(a), (b) or (c) in hybrid, (a) in lexical mode": product(lex + sem + roc, lex),
    }
    report: dict[str, Any] = {
        "groups": groups,
        "configurations": configs,
        "by_configuration": {
            c["feedback"]: fit_ranker.summary(groups, {m: scores[m][i] for m in MODES})
            for i, c in enumerate(configs)
        },
        "by_configuration_and_group": lexical_stems.by_group(
            [c["feedback"] for c in configs], scores, groups, ("hybrid", "lexical")
        ),
        "by_configuration_and_category": {
            c["feedback"]: fit_ranker.by_category(
                {m: {g: rows[i][m][g] for g in cats} for m in MODES}, cats
            )
            for i, c in enumerate(configs)
        },
        "pools": {},
    }
    for name, pairs in pools.items():
        if len(pairs) == 1:
            continue
        cv = _pool(configs, rows, groups, cats, pairs)
        report["pools"][name] = cv
        print(name, "held out", cv["held_out"], "fitted", cv["fitted"], flush=True)
    emit(report, args.out)


if __name__ == "__main__":
    main()
