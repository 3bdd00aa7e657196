"""What a search's limit does to its first answers (issue 36, round twelve).

Every question of the three evals is searched again through the product's ``SearchService``
over ``bench.replay``'s recordings, at each limit of ``--limits``, in each mode. Per limit:
the eval's figure over the first answers (the first 10, or all of them below 10: a search of
limit 5 is scored on its 5), and the share of searches whose first ``min(limit, 10)`` answers
are those of the same search at limit 10: in the same order (path and lines), and exactly
(their scores too).

The product's code is whatever ``codebase_mcp_search`` imports: to measure another revision,
put its source first on the path (``PYTHONPATH=WT/build/editable``, ``bench`` from here).

    python -m bench.search_limits --dir DIR [--limits 5,10,20,50]
        [--modes hybrid,lexical,semantic] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

from bench import replay, repo_search
from bench.replay_store import load_recordings
from bench.retrieval import rank_of, ranking_variants
from codebase_mcp_search.core.models import SearchHit, SearchQuery

REFERENCE = 10


def _cases(group: str, data: dict[str, Any]) -> list[tuple[str, str | None, Any]]:
    """(text, repository id or None, how to score) for each question of a recording."""
    if group == "@cosqa":
        return [(t, None, ("rank", p, s, e)) for t, p, s, e in data["queries"]]
    if group == "@own":
        return [
            (
                q["query"],
                data["repo_ids"][q["corpus"]],
                ("rank", q["path"], q["start_line"], q["end_line"]),
            )
            for q in data["queries"]
        ]
    out = []
    for q in data["queries"]:
        targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
        out.append(
            (
                q["query"],
                None,
                ("ndcg", targets, repo_search.covered_targets(data["chunks"], targets)),
            )
        )
    return out


def _score(hits: list[SearchHit], how: Any) -> float:
    if how[0] == "ndcg":
        return repo_search.ndcg_at_10(hits, how[1], how[2])
    r = rank_of(hits, how[1], how[2], how[3])
    return 1.0 / r if r else 0.0


def _place(h: SearchHit) -> tuple[str, int, int]:
    return (h.file_path, h.start_line, h.end_line)


def _key(h: SearchHit) -> tuple[str, int, int, float]:
    return (*_place(h), h.similarity_score)


async def measure(datas: dict[str, Any], limits: list[int], mode: str) -> dict[str, Any]:
    variant = ranking_variants(None)["default"]
    figures: dict[int, dict[str, float]] = {n: {} for n in limits}
    same: dict[int, list[bool]] = {n: [] for n in limits}
    order: dict[int, list[bool]] = {n: [] for n in limits}
    for group, data in datas.items():
        service = replay._service(data, variant)
        scores: dict[int, list[float]] = {n: [] for n in limits}
        for text, repo, how in _cases(group, data):
            hits = {}
            for n in sorted({*limits, REFERENCE}):
                query = SearchQuery.build(text, mode=mode, limit=n, repository_id=repo)
                hits[n] = (await service.search(query)).hits
            for n in limits:
                first = hits[n][:REFERENCE]
                scores[n].append(_score(first, how))
                k = min(n, REFERENCE)
                reference = hits[REFERENCE][:k]
                order[n].append([_place(h) for h in first[:k]] == [_place(h) for h in reference])
                same[n].append([_key(h) for h in first[:k]] == [_key(h) for h in reference])
        for n in limits:
            figures[n][group] = statistics.fmean(scores[n])
    out: dict[str, Any] = {}
    for n in limits:
        repos = [v for g, v in figures[n].items() if not g.startswith("@")]
        out[str(n)] = {
            "repos_ndcg@10": round(statistics.fmean(repos), 4),
            "cosqa_mrr@10": round(figures[n].get("@cosqa", float("nan")), 4),
            "own_mrr@10": round(figures[n].get("@own", float("nan")), 4),
            "first_in_the_order_of_limit_10": round(statistics.fmean(order[n]), 3),
            "first_as_at_limit_10": round(statistics.fmean(same[n]), 3),
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True, help="bench.replay's recordings")
    p.add_argument("--limits", default="5,10,20,50")
    p.add_argument("--modes", default="hybrid,lexical,semantic")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = load_recordings(args.dir)
    limits = [int(n) for n in args.limits.split(",")]
    result = {}
    for mode in args.modes.split(","):
        result[mode] = asyncio.run(measure(datas, limits, mode))
        for n, row in result[mode].items():
            print(f"{mode} limit {n}: {json.dumps(row)}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
