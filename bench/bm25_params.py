"""BM25's k1 and b, cross-validated by repository (issue 36, round ten).

``core.lexical`` scores with Lucene's defaults (k1 = 1.2, b = 0.75), tuned for prose; a code
chunk's length says something else than a paragraph's (a table of escape codes, a long
generated match). k1 and b change every lexical score, which ``bench.replay`` cannot replay;
its recordings keep every chunk, so, as ``bench.lexical_fields`` does for the fields, each
recorded lexical list (the plain one hybrid fuses and the one with stem groups lexical mode
ranks) is asked again of an ``InMemoryChunkStore`` holding them, under other constants (with
today's it reproduces the recorded lists exactly, ``--check``), then scored through the real
``SearchService`` with the default ranking.

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
from bench.lexical_fields import check, evaluate
from bench.replay_store import store_of
from codebase_mcp_search.adapters.memory import InMemoryChunkStore
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


async def rebuild(data: dict[str, Any], store: InMemoryChunkStore) -> dict[str, Any]:
    """``data`` with its plain and stemmed lexical lists asked again of ``store``
    (``store_of(data)``) under the current constants, to the recorded depth."""
    depth = replay_store.DEPTH
    plain = {
        (terms, flt): await store.lexical_search(terms, flt, depth)
        for terms, flt in data["lexical"]
    }
    stemmed = {
        (terms, flt, groups): await store.lexical_search(terms, flt, depth, groups)
        for terms, flt, groups in data.get("stemmed", {})
    }
    return {**data, "lexical": plain, "stemmed": stemmed}


def check_stemmed(datas: dict[str, dict[str, Any]]) -> None:
    """Every recorded list, plain and stemmed, is rebuilt exactly by ``rebuild``."""
    rebuilt = asyncio.run(_rebuilt(datas))
    for lists in ("lexical", "stemmed"):
        check(datas, lambda d: rebuilt[id(d)], lists)


async def _rebuilt(datas: dict[str, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {id(d): await rebuild(d, await store_of(d)) for d in datas.values()}


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
    stores = {name: asyncio.run(store_of(data)) for name, data in datas.items()}
    results = []
    for k1, b in grid:
        started = time.perf_counter()
        with constants(k1, b):
            rebuilt = {
                name: asyncio.run(rebuild(data, stores[name])) for name, data in datas.items()
            }
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
