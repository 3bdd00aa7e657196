"""Files a question names by their path, as lexical candidates: the grid and its
cross-validation (issue 36, round eleven).

``services.search.path_files`` adds to a lexical list (lexical mode's, and the one a hybrid
search fuses) the best chunk of each of the first ``path_files`` files, over all of a
repository's paths, whose path holds at least ``path_file_share`` of the question's words
(weighed as the ranking's path gain weighs them). This scores a grid of the two knobs over
``bench.replay``'s recordings, in hybrid and lexical mode, through the product's own
``SearchService`` (a recording made before the feature answers a search within one file from
a memory store of its chunks: ``replay_store._Replay``), then cross-validates as
``bench.fit_ranker`` does: leave one of the 18 groups (16 repositories, CoSQA, the own eval)
out, choose on the other 17 the configuration best on the mean of both modes' blocks among
those below today's (``path_files`` 0) on no block, and score the one left out with it.

    python -m bench.path_files --dir DIR [--files 0,3,5,10] [--shares 0.1,0.2,0.3]
        [--out bench/results/path_files_round11.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench import replay
from bench.replay_store import load_recordings
from bench.retrieval import Variant, metrics
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical")
Config = tuple[int, float]


async def per_group(
    datas: dict[str, dict[str, Any]], config: Config, mode: str
) -> dict[str, float]:
    """Each group's figure (a repository's mean NDCG@10, CoSQA's and the own eval's MRR@10)."""
    files, share = config
    variant = Variant(RankingConfig(path_files=files, path_file_share=share), {})
    out: dict[str, float] = {}
    for group, data in datas.items():
        if group == "@cosqa":
            out[group] = metrics(await replay.score_cosqa(data, variant, mode))["mrr@10"]
        elif group == "@own":
            out[group] = metrics(await replay.score_own(data, variant, mode))["mrr@10"]
        else:
            rows = await replay.score_repo(data, variant, mode)
            out[group] = statistics.fmean(r["ndcg"] for r in rows)
    return out


def blocks(per: dict[str, float], groups: list[str]) -> dict[str, float]:
    """The eval blocks of ``groups``: the repositories' mean, CoSQA, the own eval."""
    repos = [per[g] for g in groups if not g.startswith("@")]
    out = {"repo": statistics.fmean(repos)} if repos else {}
    out |= {g: per[g] for g in ("@cosqa", "@own") if g in groups}
    return out


def cross_validate(scores: dict[Config, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Leave one group out (module docstring); ``scores[config][mode][group]``."""
    base = (
        scores[(0, 0.2)] if (0, 0.2) in scores else next(v for k, v in scores.items() if not k[0])
    )
    groups = list(base["hybrid"])
    held: dict[str, dict[str, float]] = {m: {} for m in MODES}
    chosen: dict[str, Config] = {}
    for left in groups:
        train = [g for g in groups if g != left]
        floor = {m: blocks(base[m], train) for m in MODES}
        admissible = [
            c
            for c, s in scores.items()
            if all(blocks(s[m], train)[k] >= v - 1e-9 for m in MODES for k, v in floor[m].items())
        ]

        def objective(c: Config, train: list[str] = train) -> tuple[float, int, float]:
            s = scores[c]
            value = statistics.fmean(statistics.fmean(blocks(s[m], train).values()) for m in MODES)
            # Ties: fewer files asked for, then the lower share.
            return round(value, 6), -c[0], -c[1]

        chosen[left] = max(admissible, key=objective)
        for m in MODES:
            held[m][left] = scores[chosen[left]][m][left]
    return {
        "held_out": {m: _summary(held[m]) for m in MODES},
        "chosen_by_fold": {g: list(c) for g, c in chosen.items()},
        "choices": {f"{c[0]}/{c[1]}": n for c, n in Counter(chosen.values()).items()},
    }


def _summary(per: dict[str, float]) -> dict[str, float]:
    out = {"repo_ndcg@10": round(blocks(per, list(per))["repo"], 4)}
    out |= {f"{g[1:]}_mrr@10": round(per[g], 4) for g in ("@cosqa", "@own") if g in per}
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    datas = load_recordings(args.dir)
    grid: list[Config] = [(0, 0.2)] + [
        (int(f), float(s))
        for f, s in itertools.product(args.files.split(","), args.shares.split(","))
        if int(f) > 0
    ]
    scores: dict[Config, dict[str, dict[str, float]]] = {}
    for config in grid:
        scores[config] = {m: await per_group(datas, config, m) for m in MODES}
        print(config, {m: _summary(scores[config][m]) for m in MODES}, flush=True)
    return {
        "command": "python -m bench.path_files --dir DIR",
        "in_sample": {
            f"{c[0]}/{c[1]}": {m: _summary(s[m]) | {"by_group": s[m]} for m in MODES}
            for c, s in scores.items()
        },
        **cross_validate(scores),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--files", default="0,3,5,10")
    p.add_argument("--shares", default="0.1,0.2,0.3")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps({k: result[k] for k in ("held_out", "choices")}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
