"""Why hybrid loses to one of its lists: per question, where each raw list held the answer.

Over ``bench.replay`` recordings, each question is searched in the three modes through the
real ``SearchService``, and the two lists hybrid fused (semantic and lexical candidates, at
the fusion's depth, before the ranking stack) are captured from the store. Printed: for every
question where hybrid trails the better of lexical and semantic by more than ``--margin``,
the rank of the first answer in each raw list and in each mode's top 10; then, per bench, how
measurable properties of the query's lists correlate with which list answers better
(lexical minus semantic metric), the evidence a per-query fusion weight would need. The
lists' scores are the store's: cosines for the semantic list (twice the spread of the
fusion's ``(1 + cos) / 2``), BM25 over the query's bound for the lexical one.

    python -m bench.fusion_gap --dir DIR [--cosqa DIR] [--own DIR] [--repos a,b] [--margin 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import replay_store, repo_search
from bench.replay_store import Capturing, _Vectors
from bench.retrieval import SLACK_LINES, ranking_variants
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import ScoredChunk, SearchQuery
from codebase_mcp_search.core.services import SearchService

MODES = ("hybrid", "lexical", "semantic")


def features(sem: list[ScoredChunk], lex: list[ScoredChunk]) -> dict[str, float]:
    """Properties of the two lists a fusion weight could read at no cost."""
    s = [sc.score for sc in sem] or [0.0]
    lx = [sc.score for sc in lex] or [0.0]
    top_files = ({sc.chunk.file_path for sc in sem[:10]}, {sc.chunk.file_path for sc in lex[:10]})
    return {
        "sem_spread": s[0] - s[-1],
        "sem_lead10": s[0] - s[min(9, len(s) - 1)],
        "lex_top": lx[0],
        "lex_lead_share": (lx[0] - lx[min(9, len(lx) - 1)]) / max(1e-9, lx[0] - lx[-1]),
        "file_overlap10": float(len(top_files[0] & top_files[1])),
        "same_top_file": float(
            bool(sem and lex and sem[0].chunk.file_path == lex[0].chunk.file_path)
        ),
    }


def first_rank(items: list[Any], hit: Any) -> int | None:
    return next((i for i, x in enumerate(items, start=1) if hit(x)), None)


async def run(data: dict[str, Any], questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each question: its metric per mode, the answer's rank per raw list, the features."""
    store = Capturing(data)
    emb = _Vectors(data["model"], data["dimension"], data["vectors"])
    variant = ranking_variants(None)["default"]
    svc = SearchService(
        store,
        emb,
        fusion=FusionConfig(),
        ranking=variant.ranking,
        stem_weight=replay_store.stem_weight(data),
    )
    rows = []
    for q in questions:
        hit = q["hit"]
        row: dict[str, Any] = {"query": q["text"]}
        for mode in MODES:
            store.forget()
            query = SearchQuery.build(q["text"], mode=mode, limit=10, repository_id=q.get("repo"))
            hits = list((await svc.search(query)).hits)
            row[mode] = q["metric"](hits)
            row[mode + "_rank"] = first_rank(
                hits, lambda h, hit=hit: hit(h.file_path, h.start_line, h.end_line)
            )
            if mode == "hybrid":
                sem, lex = store.last.get("semantic", []), store.last.get("lexical", [])
                row.update(features(sem, lex))
                for name, lst in (("sem_list", sem), ("lex_list", lex)):
                    row[name] = first_rank(
                        lst,
                        lambda sc, hit=hit: hit(
                            sc.chunk.file_path, sc.chunk.start_line, sc.chunk.end_line
                        ),
                    )
        rows.append(row)
    return rows


def repo_questions(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for q in data["queries"]:
        targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
        n = repo_search.covered_targets(data["chunks"], targets)

        def hit(path: str, start: int, end: int, targets: list[Any] = targets) -> bool:
            return any(repo_search._covers(path, start, end, t) for t in targets)

        out.append(
            {
                "text": q["query"],
                "metric": lambda hits, t=targets, n=n: repo_search.ndcg_at_10(hits, t, n),
                "hit": hit,
            }
        )
    return out


def gold_questions(
    queries: Sequence[tuple[str, str, int, int, str | None]],
) -> list[dict[str, Any]]:
    """CoSQA and the own eval: one gold function; the metric is its reciprocal rank."""
    out = []
    for text, path, start, end, repo in queries:

        def hit(
            p: str, s: int, e: int, path: str = path, start: int = start, end: int = end
        ) -> bool:
            # As bench.retrieval.rank_of: overlapping, and not much longer than the function.
            return p == path and s <= end and e >= start and e - s <= end - start + SLACK_LINES

        def rr(hits: list[Any], hit: Any = hit) -> float:
            r = first_rank(hits[:10], lambda h: hit(h.file_path, h.start_line, h.end_line))
            return 0.0 if r is None else 1.0 / r

        out.append({"text": text, "metric": rr, "hit": hit, "repo": repo})
    return out


def report(name: str, rows: list[dict[str, Any]], margin: float) -> None:
    mean = {m: float(np.mean([r[m] for r in rows])) for m in MODES}
    print(
        f"\n== {name}: {len(rows)} questions, " + ", ".join(f"{m} {v:.4f}" for m, v in mean.items())
    )
    kinds: dict[str, int] = defaultdict(int)
    for r in rows:
        best = max(r["lexical"], r["semantic"])
        if r["hybrid"] >= best - margin:
            continue
        lex_better = r["lexical"] >= r["semantic"]
        kinds[
            f"{'lexical' if lex_better else 'semantic'} better, its raw list rank 1: "
            f"{(r['lex_list'] if lex_better else r['sem_list']) == 1}"
        ] += 1
        print(
            f"  H{r['hybrid']:.2f} L{r['lexical']:.2f} S{r['semantic']:.2f}  raw lists: lexical "
            f"{r['lex_list']} semantic {r['sem_list']}  top-10: hybrid {r['hybrid_rank']} lexical "
            f"{r['lexical_rank']} semantic {r['semantic_rank']}  {r['query'][:70]}"
        )
    for k, v in sorted(kinds.items()):
        print(f"  {v:3d} x {k}")
    y = np.array([r["lexical"] - r["semantic"] for r in rows])
    for f in (
        "sem_spread",
        "sem_lead10",
        "lex_top",
        "lex_lead_share",
        "file_overlap10",
        "same_top_file",
    ):
        x = np.array([r[f] for r in rows])
        corr = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else float("nan")
        print(f"  corr({f}, lexical - semantic) = {corr:+.2f}  (median {np.median(x):.3f})")


async def main_async(args: argparse.Namespace) -> None:
    files = await asyncio.to_thread(
        lambda: sorted(Path(args.dir).glob("repo_*.pkl")) if args.dir else []
    )
    if args.repos:
        files = [f for f in files if f.stem[5:] in args.repos.split(",")]
    every: list[dict[str, Any]] = []
    for f in files:
        data = pickle.loads(f.read_bytes())
        rows = await run(data, repo_questions(data))
        every += rows
        if args.repos:
            report(f.stem[5:], rows, args.margin)
    if every:
        report("repository dev half", every, args.margin)
    if args.cosqa:
        data = pickle.loads((Path(args.cosqa) / "cosqa.pkl").read_bytes())
        qs = [(t, p, s, e, None) for t, p, s, e in data["queries"]]
        report("CoSQA dev", await run(data, gold_questions(qs)), args.margin)
    if args.own:
        data = pickle.loads((Path(args.own) / "own.pkl").read_bytes())
        qs = [
            (q["query"], q["path"], q["start_line"], q["end_line"], data["repo_ids"][q["corpus"]])
            for q in data["queries"]
        ]
        report("own eval", await run(data, gold_questions(qs)), args.margin)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", default=None, help="bench.replay recordings of the repository bench")
    p.add_argument("--cosqa", default=None)
    p.add_argument("--own", default=None)
    p.add_argument("--repos", default=None, help="only these repositories, each reported")
    p.add_argument("--margin", type=float, default=0.05)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
