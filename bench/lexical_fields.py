"""Fit the BM25 fields' weights, cross-validated by repository (issue 36, round four).

A chunk's BM25 document is its content, its path and its symbol name, each counted as many
times as ``core.lexical.Fields`` says, and its documentation comments once more per unit of
``doc``. Field weights change the index, which ``bench.replay`` cannot replay; but its
recordings keep every chunk of the corpora, so this script rebuilds each recorded lexical list
from them under other field weights (the same BM25 as the memory store, over every chunk of
the recording: with today's weights it reproduces the recorded lists exactly, ``--check``)
and scores each weighting through the real ``SearchService`` with the default ranking.

Then the procedure of ``bench.fit_ranker``: the 18 groups (16 dev repositories, CoSQA, the own
eval), an objective per mode over the evals' blocks, a weighting admissible only if no block
is below today's in hybrid or lexical mode; each group is scored by the admissible weighting
best on the other 17 (held out), and the one best on all 18 is the fit (in sample).

    python -m bench.replay record --bench repo|cosqa|own --out DIR   # once each, one DIR
    python -m bench.lexical_fields --dir DIR [--path 1,2,3] [--symbol 1,2] [--doc 0,1,2,3]
        [--out FILE] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bench import fit_ranker, replay, replay_store
from bench.retrieval import Variant
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical", "semantic")


def index_of(
    chunks: Iterable[Any], terms_of: Callable[[Any], Mapping[str, int]]
) -> tuple[dict[str, dict[str, int]], dict[str, int], dict[str, Any]]:
    """Postings (term -> chunk id -> frequency), document lengths and chunks by id of
    ``chunks`` under the analysis ``terms_of``."""
    postings: dict[str, dict[str, int]] = {}
    doc_len: dict[str, int] = {}
    by_id = {}
    for c in chunks:
        by_id[c.id] = c
        terms = terms_of(c)
        for t, tf in terms.items():
            postings.setdefault(t, {})[c.id] = tf
        doc_len[c.id] = sum(terms.values())
    return postings, doc_len, by_id


def sums(
    idfs: Mapping[str, float],
    postings: dict[str, dict[str, int]],
    doc_len: dict[str, int],
    avg: float,
) -> dict[str, float]:
    """Each matching chunk's raw BM25 over the query terms weighed ``idfs``."""
    raw: dict[str, float] = {}
    for t, w in idfs.items():
        for cid, tf in postings[t].items():
            raw[cid] = raw.get(cid, 0.0) + lexical.term_score(tf, doc_len[cid], avg, w)
    return raw


def ranked(
    raw: dict[str, float], bound: float, by_id: dict[str, Any], filters: Any
) -> tuple[list[ScoredChunk], int]:
    """A rebuilt lexical list as the store answers it: the chunks ``filters`` admits, scored
    ``raw / bound`` (``lexical.normalised``), best first, ties by path and line; the first
    ``replay_store.DEPTH`` with the number matched."""
    matched = [
        (by_id[cid], lexical.normalised(s, bound))
        for cid, s in raw.items()
        if filters.matches(by_id[cid])
    ]
    matched.sort(key=lambda cs: (-cs[1], cs[0].file_path, cs[0].start_line))
    return [ScoredChunk(c, s) for c, s in matched[: replay_store.DEPTH]], len(matched)


def rebuild(data: dict[str, Any], fields: lexical.Fields) -> dict[str, Any]:
    """``data`` (a recording) with every lexical list recomputed under ``fields``, to the
    recorded depth: BM25 as ``InMemoryChunkStore.lexical_search`` computes it, over every
    chunk of the recording."""
    postings, doc_len, by_id = index_of(
        data["chunks"],
        lambda c: lexical.document_terms(c.content, c.file_path, c.symbol, fields),
    )
    n = len(doc_len)
    avg = sum(doc_len.values()) / n
    lists = {}
    for key in data["lexical"]:
        terms, filters = key
        idfs = {t: lexical.idf(n, len(postings[t])) for t in dict.fromkeys(terms) if t in postings}
        raw = sums(idfs, postings, doc_len, avg)
        lists[key] = ranked(raw, lexical.upper_bound(idfs.values()), by_id, filters)
    return {**data, "lexical": lists}


def _rr(ranks: list[int | None]) -> list[float]:
    return [1.0 / r if r and r <= 10 else 0.0 for r in ranks]


async def evaluate(
    datas: dict[str, dict[str, Any]], modes: tuple[str, ...]
) -> dict[str, dict[str, list[float]]]:
    """Per mode, per group (a repository, ``@cosqa``, ``@own``): each query's metric, with
    the default ranking."""
    v = Variant(RankingConfig(), {})
    out: dict[str, dict[str, list[float]]] = {}
    for mode in modes:
        groups: dict[str, list[float]] = {}
        for name, data in datas.items():
            if name == "@cosqa":
                groups[name] = _rr(await replay.score_cosqa(data, v, mode))
            elif name == "@own":
                groups[name] = _rr(await replay.score_own(data, v, mode))
            else:
                groups[name] = [r["ndcg"] for r in await replay.score_repo(data, v, mode)]
        out[mode] = groups
    return out


def check(
    datas: dict[str, dict[str, Any]],
    rebuilt: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    lists: str = "lexical",
) -> None:
    """Every recorded list of ``lists`` (``lexical``, or ``stemmed``: lexical mode's) is
    rebuilt exactly (ids and scores) by ``rebuilt`` (default: the shipped fields,
    ``lexical.FIELDS``); else exits naming the first that differs."""
    for name, data in datas.items():
        new = (rebuilt or (lambda d: rebuild(d, lexical.FIELDS)))(data)[lists]
        for key, (hits, total) in data.get(lists, {}).items():
            got, got_total = new[key]
            if [(h.chunk.id, h.score) for h in hits] != [
                (h.chunk.id, h.score) for h in got[: len(hits)]
            ] or total != got_total:
                raise SystemExit(f"{name}: the {lists} list of {key[0]} differs")
        print("reproduced", lists, name, flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--path", default="1,2,3")
    p.add_argument("--symbol", default="1,2")
    p.add_argument("--doc", default="0,1,2,3")
    p.add_argument("--check", action="store_true", help="only check today's lists reproduce")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir)
    if args.check:
        check(datas)
        return
    today = lexical.FIELDS
    grid = [today] + [
        f
        for path, symbol, doc in itertools.product(
            *(map(int, s.split(",")) for s in (args.path, args.symbol, args.doc))
        )
        if (f := lexical.Fields(path=path, symbol=symbol, doc=doc)) != today
    ]
    results = []
    semantic: dict[str, list[float]] = {}
    for i, fields in enumerate(grid):
        started = time.perf_counter()
        rebuilt = {name: rebuild(data, fields) for name, data in datas.items()}
        # Semantic mode reads no lexical list when every chunk holds a vector: scored once.
        r = asyncio.run(evaluate(rebuilt, MODES if i == 0 else ("hybrid", "lexical")))
        semantic = semantic or r["semantic"]
        r["semantic"] = semantic
        results.append(r)
        one = fit_ranker.group_scores([r])
        row = fit_ranker.summary(sorted(r["hybrid"]), {m: one[m][0] for m in MODES})
        print(f"{fields} {json.dumps(row)} ({time.perf_counter() - started:.0f} s)", flush=True)
    groups = sorted(results[0]["hybrid"])
    scores = fit_ranker.group_scores(results)
    configs = [vars_of(f) for f in grid]
    allowed = {g: np.ones(len(grid), dtype=bool) for g in [*groups, "*"]}
    report = {
        "groups": groups,
        "weightings": configs,
        "by_weighting": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES}) for i in range(len(grid))
        ],
        "by_weighting_and_group": [
            {m: {g: round(float(scores[m][i][j]), 4) for j, g in enumerate(groups)} for m in MODES}
            for i in range(len(grid))
        ],
        **fit_ranker.cross_validate(configs, scores, groups, allowed),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


def vars_of(fields: lexical.Fields) -> dict[str, float | None]:
    return {"path": fields.path, "symbol": fields.symbol, "doc": fields.doc}


if __name__ == "__main__":
    main()
