"""BM25's k1 and b, cross-validated by repository (issue 36, round ten).

``core.lexical`` scores with Lucene's defaults (k1 = 1.2, b = 0.75), tuned for prose; a code
chunk's length says something else than a paragraph's (a table of escape codes, a long
generated match). k1 and b change every lexical score, which ``bench.replay`` cannot replay;
its recordings keep every chunk, so, as ``bench.lexical_fields`` does for the fields, each
recorded lexical list (the plain one hybrid fuses and the one with stem groups lexical mode
ranks) is rebuilt from them under other constants (BM25 as ``InMemoryChunkStore``'s, stem
groups included: with today's constants it reproduces the recorded lists exactly,
``--check``), then scored through the real ``SearchService`` with the default ranking.

Then ``bench.fit_ranker``'s procedure: the 18 groups, an objective per mode (hybrid and
lexical), admissible only if no block is below today's in either mode, each group scored by
the admissible pair best on the other 17 (held out).

    python -m bench.bm25_params --dir DIR [--k1 0.9,1.2,1.5] [--b 0.5,0.75,0.9] [--check]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench import fit_ranker, replay_store
from bench.lexical_fields import check, evaluate, index_of, ranked, sums
from codebase_mcp_search.core import lexical

MODES = ("hybrid", "lexical")


@contextmanager
def constants(k1: float, b: float) -> Iterator[None]:
    """``core.lexical`` scoring with ``k1`` and ``b`` inside the block (its functions read
    them at each call)."""
    saved = lexical.K1, lexical.B
    lexical.K1, lexical.B = k1, b
    try:
        yield
    finally:
        lexical.K1, lexical.B = saved


def rebuild(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its plain and stemmed lexical lists recomputed from its chunks under the
    current constants (``InMemoryChunkStore.lexical_search``, stem groups as its ``_group``)."""
    postings, doc_len, by_id = index_of(
        data["chunks"],
        lambda c: lexical.document_terms(c.content, c.file_path, c.symbol, lexical.FIELDS),
    )
    n = len(doc_len)
    avg = sum(doc_len.values()) / n
    plain = {}
    for key in data["lexical"]:
        terms, filters = key
        idfs = {t: lexical.idf(n, len(postings[t])) for t in dict.fromkeys(terms) if t in postings}
        raw = sums(idfs, postings, doc_len, avg)
        plain[key] = ranked(raw, lexical.upper_bound(idfs.values()), by_id, filters)
    stemmed = {}
    for key in data.get("stemmed", {}):
        terms, filters, groups = key
        lists = [
            (postings[t], lexical.idf(n, len(postings[t])))
            for t in dict.fromkeys(terms)
            if t in postings
        ]
        for group in groups:
            held = [postings[t] for t in dict.fromkeys(group.terms) if t in postings]
            if not held:
                continue
            merged: dict[str, int] = {}
            for p in held:
                for cid, tf in p.items():
                    merged[cid] = merged.get(cid, 0) + tf
            df = min(n, sum(len(p) for p in held))
            lists.append((merged, group.weight * lexical.idf(n, df)))
        scores: dict[str, float] = {}
        for p, w in lists:
            for cid, tf in p.items():
                scores[cid] = scores.get(cid, 0.0) + lexical.term_score(tf, doc_len[cid], avg, w)
        stemmed[key] = ranked(scores, lexical.upper_bound(w for _, w in lists), by_id, filters)
    return {**data, "lexical": plain, "stemmed": stemmed}


def check_stemmed(datas: dict[str, dict[str, Any]]) -> None:
    """Every recorded list, plain and stemmed, is rebuilt exactly by ``rebuild``."""
    check(datas, rebuild)
    check(datas, rebuild, "stemmed")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--k1", default="0.9,1.2,1.5")
    p.add_argument("--b", default="0.5,0.75,0.9")
    p.add_argument("--check", action="store_true", help="only check today's lists reproduce")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir)
    if args.check:
        check_stemmed(datas)
        return
    today = (lexical.K1, lexical.B)
    pairs = itertools.product(map(float, args.k1.split(",")), map(float, args.b.split(",")))
    grid = [today, *(pair for pair in pairs if pair != today)]
    saved = dict(fit_ranker.MODES), fit_ranker.GUARDED
    fit_ranker.MODES.clear()
    fit_ranker.MODES.update(dict.fromkeys(MODES, 1.0))
    fit_ranker.GUARDED = MODES
    try:
        report = _fit(datas, grid)
    finally:
        fit_ranker.MODES.clear()
        fit_ranker.MODES.update(saved[0])
        fit_ranker.GUARDED = saved[1]
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


def _fit(datas: dict[str, dict[str, Any]], grid: list[tuple[float, float]]) -> dict[str, Any]:
    """Each pair of ``grid`` scored, then cross-validated (``fit_ranker``'s modes set to
    ``MODES``)."""
    results = []
    for k1, b in grid:
        started = time.perf_counter()
        with constants(k1, b):
            rebuilt = {name: rebuild(data) for name, data in datas.items()}
            r = asyncio.run(evaluate(rebuilt, MODES))
        results.append(r)
        one = fit_ranker.group_scores([r])
        row = fit_ranker.summary(sorted(r["hybrid"]), {m: one[m][0] for m in MODES})
        print(
            f"k1={k1} b={b} {json.dumps(row)} ({time.perf_counter() - started:.0f} s)", flush=True
        )
    groups = sorted(results[0]["hybrid"])
    scores = fit_ranker.group_scores(results)
    configs: list[dict[str, float | None]] = [{"k1": k1, "b": b} for k1, b in grid]
    allowed = {g: np.ones(len(grid), dtype=bool) for g in [*groups, "*"]}
    return {
        "groups": groups,
        "constants": configs,
        "by_constants": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES}) for i in range(len(grid))
        ],
        **fit_ranker.cross_validate(configs, scores, groups, allowed),
    }


if __name__ == "__main__":
    main()
