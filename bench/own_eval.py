"""Retrieval quality on real repositories: 60 hand-written queries over rich, pytest, pathspec.

Each corpus is the installed package's source (versions pinned in own_eval_queries.json, since
the gold line ranges depend on them), copied to a temporary repository and indexed with the
project's own pipeline. Scoring is the same as for CoSQA (bench/retrieval.py).

    python -m bench.own_eval [--embedder none|hash|onnx|local] [--modes lexical] [--out FILE]
                             [--variants JSON] [--context path|path_symbol] [--show-misses]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import context_text
from bench.harness import open_bench
from bench.retrieval import emit, metrics, rank_of, ranked_search, ranking_variants
from codebase_mcp_search.entrypoints.settings import Settings

QUERIES = Path(__file__).resolve().parent / "own_eval_queries.json"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    spec = json.loads(QUERIES.read_text())
    with tempfile.TemporaryDirectory(prefix="own-eval-") as tmp:
        roots: dict[str, Path] = {}
        for name, c in spec["corpora"].items():
            dist = c.get("distribution", c["package"])
            have = importlib.metadata.version(dist)
            if have != c["version"]:
                sys.exit(f"{dist} {have} is installed; the gold ranges need {c['version']}")
            pkg_dir = Path(importlib.import_module(c["package"]).__file__ or "").parent
            roots[name] = Path(tmp) / name
            shutil.copytree(pkg_dir, roots[name], ignore=shutil.ignore_patterns("__pycache__"))
        settings = Settings(store="memory", embedder=args.embedder)
        async with open_bench(settings) as bench:
            cb = bench.codebase
            repo_ids = {name: (await cb.index(root)).repository_id for name, root in roots.items()}
            out: dict[str, Any] = {"embedder": args.embedder, "queries": len(spec["queries"])}
            for mode in args.modes.split(","):
                for variant, ranking in ranking_variants(args.variants).items():
                    ranks: list[int | None] = []
                    per_corpus: dict[str, list[int | None]] = {}
                    misses = []
                    for q in spec["queries"]:
                        result = await ranked_search(
                            bench, ranking, q["query"], mode, repository_id=repo_ids[q["corpus"]]
                        )
                        r = rank_of(result.hits, q["path"], q["start_line"], q["end_line"])
                        ranks.append(r)
                        per_corpus.setdefault(q["corpus"], []).append(r)
                        if r is None:
                            misses.append(f"{q['corpus']}: {q['query']} -> {q['symbol']}")
                    key = mode if variant == "default" else f"{mode}/{variant}"
                    out[key] = {
                        **metrics(ranks),
                        "by_corpus": {k: metrics(v)["mrr@10"] for k, v in per_corpus.items()},
                    }
                    if args.show_misses:
                        out[key]["misses"] = misses
    if args.context:
        out["context"] = args.context
        out["context_embedding"] = context_text.summary()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--embedder", default="none", choices=["none", "hash", "onnx", "local"])
    p.add_argument("--modes", default="lexical")
    p.add_argument("--show-misses", action="store_true")
    p.add_argument("--variants", default=None, help="ranking variants, JSON {name: {field: value}}")
    p.add_argument(
        "--context",
        default=None,
        choices=sorted(context_text.VARIANTS),
        help="embed a header (path, or path and symbol) before each chunk's text",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args()
    context_text.install(args.context)
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
