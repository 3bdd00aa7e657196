"""The ranking's own cost, side by side: each recorded question of ``bench.replay``'s
benches searched in hybrid mode with the default ranking and with ``--baseline`` (JSON of
RankingConfig fields, ``"fusion"`` for FusionConfig's), by turns, best of ``--repeat`` each.
The store answers from the recorded lists, so the time is the fusion, the ranking and the
hits' assembly: what a ranking change adds per search, without the machine's I/O noise.

    python -m bench.ranking_cost [--dir DIR] [--baseline JSON] [--repeat 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import time
from pathlib import Path

from bench import replay
from bench.retrieval import ranking_variants
from codebase_mcp_search.core.models import SearchQuery


async def measure(directory: Path, baseline: str, repeat: int) -> dict[str, float]:
    variants = ranking_variants(None, {"baseline": json.loads(baseline)})
    names = ["baseline", "default"]
    best: dict[str, list[float]] = {n: [] for n in names}
    for f in sorted(await asyncio.to_thread(lambda: list(directory.glob("*.pkl")))):
        data = pickle.loads(await asyncio.to_thread(f.read_bytes))
        services = {n: replay._service(data, variants[n]) for n in names}
        repo_ids = data.get("repo_ids")
        for q in data["queries"][:200]:
            text = q["query"] if isinstance(q, dict) else q[0]
            rid = repo_ids[q["corpus"]] if repo_ids else None
            query = SearchQuery.build(text, mode="hybrid", limit=10, repository_id=rid)
            took: dict[str, list[float]] = {n: [] for n in names}
            for rep in range(repeat):
                for n in names if rep % 2 == 0 else names[::-1]:
                    t = time.perf_counter()
                    await services[n].search(query)
                    took[n].append((time.perf_counter() - t) * 1000.0)
            for n in names:
                best[n].append(min(took[n]))
    diff = sorted(d - b for d, b in zip(best["default"], best["baseline"], strict=True))
    out: dict[str, float] = {"questions": len(diff)}
    for n in names:
        ts = sorted(best[n])
        out[f"{n}_p50_ms"] = round(ts[len(ts) // 2], 3)
        out[f"{n}_p95_ms"] = round(ts[int(len(ts) * 0.95)], 3)
    out["difference_p50_ms"] = round(diff[len(diff) // 2], 3)
    out["difference_p95_ms"] = round(diff[int(len(diff) * 0.95)], 3)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", default="/tmp/exp19/rec")
    p.add_argument("--baseline", default='{"hollow_prior": 1.0, "named_lexical_weight": null}')
    p.add_argument("--repeat", type=int, default=6)
    args = p.parse_args()
    print(json.dumps(asyncio.run(measure(Path(args.dir), args.baseline, args.repeat)), indent=1))


if __name__ == "__main__":
    main()
