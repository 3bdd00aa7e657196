"""What choosing among today's lists could reach: the per-question oracle over search modes.

Reads a ``bench.replay score --dump`` file scored in several modes and prints, in the
bench's own aggregation (repository NDCG@10 as the mean of the repositories' means; CoSQA and
the own eval as MRR@10), each mode's figure and the figure of an oracle that, for every
question, keeps the better of the chosen modes' top tens. No fusion, weighting or per-query
selector built from these lists can beat the oracle of the modes it chooses among; a goal above
it needs better lists (another model, other lexical evidence), not another combination.

    python -m bench.replay score --dir DIR --modes hybrid,lexical,semantic --by-repo --dump D
    python -m bench.ceiling --dump D [--variant default] [--out FILE]
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import statistics
from pathlib import Path
from typing import Any

from bench.retrieval import emit

MODES = ("hybrid", "lexical", "semantic")


def _reciprocal(rank: int | None) -> float:
    return 1.0 / rank if rank and rank <= 10 else 0.0


def repo_oracle(entries: dict[str, dict[str, Any]], modes: tuple[str, ...]) -> dict[str, Any]:
    """Repository NDCG@10 of the per-question best of ``modes``: overall (mean of the
    repositories' means) and by repository."""
    by_repo: dict[str, float] = {}
    for repo in entries[modes[0]]["rows"]:
        per_question = zip(*(entries[m]["rows"][repo] for m in modes), strict=True)
        by_repo[repo] = statistics.fmean(max(x["ndcg"] for x in q) for q in per_question)
    return {
        "ndcg@10": round(statistics.fmean(by_repo.values()), 4),
        "repo": {k: round(v, 4) for k, v in sorted(by_repo.items())},
    }


def mrr_oracle(entries: dict[str, dict[str, Any]], modes: tuple[str, ...], key: str) -> float:
    """MRR@10 of the per-question best rank among ``modes`` (``key``: ``cosqa_ranks`` or
    ``own_ranks``)."""
    per_question = zip(*(entries[m][key] for m in modes), strict=True)
    values = [max(_reciprocal(r) for r in q) for q in per_question]
    return round(statistics.fmean(values), 4)


def ceiling(dump: dict[str, Any], variant: str) -> dict[str, Any]:
    entries = {m: dump[f"{m}/{variant}"] for m in MODES if f"{m}/{variant}" in dump}
    out: dict[str, Any] = {"modes": {}, "oracles": {}}
    for m, e in entries.items():
        out["modes"][m] = {k: e[k] for k in ("ndcg@10", "cosqa_mrr", "own_mrr") if k in e}
    names = tuple(entries)
    for size in (2, 3):
        for combo in itertools.combinations(names, size):
            figures: dict[str, Any] = {}
            if all("rows" in entries[m] for m in combo):
                figures.update(repo_oracle(entries, combo))
            for key, label in (("cosqa_ranks", "cosqa_mrr"), ("own_ranks", "own_mrr")):
                if all(key in entries[m] for m in combo):
                    figures[label] = mrr_oracle(entries, combo, key)
            out["oracles"]["+".join(combo)] = figures
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dump", required=True, help="a bench.replay score --dump file")
    p.add_argument("--variant", default="default")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    dump = pickle.loads(Path(args.dump).read_bytes())
    emit(ceiling(dump, args.variant), args.out)


if __name__ == "__main__":
    main()
