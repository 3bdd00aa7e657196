"""Repository-level code search: NDCG@10 on ../shared/bench/repo-search (see its README).

Each benchmark repository's ``benchmark_root`` is indexed with the product's own pipeline and
default settings (memory store: ranking lives in the core, so the Postgres store ranks alike),
then every query is searched with limit 10 and scored exactly by the benchmark's rules:

- a result covers a target when its path matches (equal, or one is a ``/``-suffix of the
  other) and, for a target with a line span, its lines overlap the span;
- a target's rank is the rank of the first result covering it; DCG counts a 1 at each rank
  holding a target (a binary relevance list);
- ``n_relevant`` counts the targets some indexed chunk covers; ideal DCG is that of
  ``min(10, n_relevant)`` ones; NDCG is 0 when ``n_relevant`` is 0;
- a repository scores the mean over its queries; the benchmark the mean over repositories.

Vectors are cached by chunk text under ``bench/.cache`` (the model's own name and its int8
graph's recipe inside, the ONNX token budget in the file's name), so a re-run embeds only new
chunk texts; a cache of another graph is embedded afresh.

    python -m bench.repo_search [--embedder onnx|none|...] [--modes lexical,hybrid]
        [--max-tokens N]
        [--repos fastapi,gin] [--bench-dir ../shared/bench/repo-search] [--out FILE]
        [--ablate] [--variants JSON] [--show-misses] [--context path|path_symbol]

``--context`` embeds a header (the chunk's path, or path and symbol) before each chunk's text
(bench/context_text.py), its vectors cached in a file of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import context_text
from bench.harness import Bench, open_bench
from bench.retrieval import Hit, Variant, emit, ranking_variants
from codebase_mcp_search.adapters.onnx.model_files import INT8_RECIPE
from codebase_mcp_search.core.models import Chunk, SearchMode, SearchQuery
from codebase_mcp_search.entrypoints.settings import Settings

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "repo-search"
CACHE = HERE / ".cache"

# Published NDCG@10 on this development half (issue 19), for the table beside ours.
PUBLISHED = {
    "semble (BM25 + potion-code-16M + ranking rules)": 0.790,
    "CodeRankEmbed hybrid": 0.807,
}

# Ablations: each switches one ranking component off (see core.ranking).
ABLATIONS: dict[str, dict[str, Any]] = {
    "no ranking stack": {"enabled": False},
    "no query-type weights": {"query_type_weights": False},
    "no definition boost": {"definition_boost": 0.0, "definition_lookup": False},
    "no definition lookup": {"definition_lookup": False},
    "no path match": {"path_boost": 0.0, "stem_boost": 0.0},
    "no file named after a query word": {"stem_boost": 0.0},
    "path words weighed alike": {"path_word_floor": 1.0},
    "stem boost by question length": {"stem_boost_position": 0},
    "no abbreviated file names": {"stem_abbreviation": 0},
    "no semantic spread floor": {"fusion": {"semantic_min_spread": 0.0}},
    "no file coherence": {"coherence_boost": 0.0},
    "no priors": {"priors": False},
    "no older-version prior": {"older_versions": False},
    "members defining the name alike": {"member_factor": 1.0},
    "no reference boost": {"reference_boost": 0.0},
    "reference boost for any question length": {"reference_max_words": 0},
    "no file diversity": {"file_decay": 1.0},
}


def path_matches(result_path: str, target_path: str) -> bool:
    a, b = result_path.strip("/"), target_path.strip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _covers(path: str, start: int, end: int, target: str | dict[str, Any]) -> bool:
    if isinstance(target, str):
        return path_matches(path, target)
    if not path_matches(path, target["path"]):
        return False
    return start <= int(target["end_line"]) and end >= int(target["start_line"])


def ndcg_at_10(
    hits: Sequence[Hit], targets: Sequence[str | dict[str, Any]], n_relevant: int
) -> float:
    if n_relevant == 0:
        return 0.0
    ranks: set[int] = set()
    for t in targets:
        for rank, h in enumerate(hits[:10], start=1):
            if _covers(h.file_path, h.start_line, h.end_line, t):
                ranks.add(rank)
                break
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(10, n_relevant) + 1))
    return dcg / ideal


def covered_targets(chunks: Sequence[Chunk], targets: Sequence[str | dict[str, Any]]) -> int:
    by_path: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_path[c.file_path].append(c)
    n = 0
    for t in targets:
        path = t if isinstance(t, str) else t["path"]
        found = False
        for p, cs in by_path.items():
            if path_matches(p, path) and any(_covers(p, c.start_line, c.end_line, t) for c in cs):
                found = True
                break
        n += found
    return n


def category(q: dict[str, Any]) -> str:
    if q.get("category"):
        return str(q["category"])
    text = q["query"].strip()
    if " " not in text:
        return "symbol"
    return "architecture" if text.lower().startswith("how ") else "semantic"


def _graph(model: str) -> str:
    """What a model's vectors depend on beyond its name: the derived int8 graph's recipe.
    Two recipes round alike closely but not bit for bit, and the product keeps the model's
    name across them (stored vectors stay valid), so a bench cache must name the recipe."""
    return INT8_RECIPE if model.startswith("onnx/") and model.endswith("-int8") else ""


def vector_cache(
    bench: str, embedder: str, name: str, *, context: str | None, max_tokens: int | None = None
) -> Path:
    """The file caching ``name``'s corpus vectors (``bench.replay`` shares it, so one run's
    vectors serve the other). A token budget or a header variant changes the vectors but not
    the model's name: each gets a file of its own."""
    budget = f"_t{max_tokens}" if max_tokens else ""
    ctx = f"_ctx-{context}" if context else ""
    return CACHE / f"{bench}_{embedder}{budget}{ctx}_{name}.npz"


def _load_cache(cache_file: Path) -> tuple[str, dict[str, Any]] | None:
    """The cached vectors and their model's name; None when there are none, or when they
    were made by another graph of the model (embedded afresh then)."""
    if not cache_file.is_file():
        return None
    data = np.load(cache_file, allow_pickle=False)
    model = str(data["model"])
    graph = str(data["graph"]) if "graph" in data.files else ""
    if graph != _graph(model):
        print(f"{cache_file.name}: vectors of another graph ({graph or 'unnamed'}), re-embedding")
        return None
    return model, dict(zip(data["hashes"].tolist(), data["vectors"], strict=True))


def _write_cache(cache_file: Path, model: str, found: dict[str, list[float]]) -> None:
    keys = sorted(found)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        cache_file,
        model=np.array(model),
        graph=np.array(_graph(model)),
        hashes=np.array(keys),
        vectors=np.array([found[k] for k in keys], dtype=np.float32),
    )


async def _seed_vectors(bench: Bench, cache_file: Path) -> None:
    cached = await asyncio.to_thread(_load_cache, cache_file)
    if cached is not None:
        await bench.store.cache_embeddings(*cached)


async def _save_vectors(
    bench: Bench, cache_file: Path, repo_id: str, model: str, context: str | None = None
) -> None:
    chunks = await bench.store.chunks(repo_id)
    if context:
        hashes = sorted({context_text.key(context, c) for c in chunks})
    else:
        hashes = sorted({c.content_hash for c in chunks})
    found = await bench.store.cached_embeddings(model, hashes)
    if found:
        await asyncio.to_thread(_write_cache, cache_file, model, found)


async def run_repo(
    spec: dict[str, Any],
    queries: list[dict[str, Any]],
    args: argparse.Namespace,
    variants: dict[str, Variant],
) -> dict[str, Any]:
    root = args.bench_dir / "repos" / spec["name"]
    if spec.get("benchmark_root"):
        root = root / spec["benchmark_root"]
    settings = Settings(store="memory", embedder=args.embedder, onnx_max_tokens=args.max_tokens)
    cache_file = vector_cache(
        "repo_search", args.embedder, spec["name"], context=args.context, max_tokens=args.max_tokens
    )
    async with open_bench(settings) as bench:
        cb = bench.codebase
        await _seed_vectors(bench, cache_file)
        started = time.perf_counter()
        indexed = await cb.index(root)
        index_s = time.perf_counter() - started
        repo = await cb.repository(indexed.repository_id)
        if repo.embedding_model:
            await _save_vectors(bench, cache_file, repo.id, repo.embedding_model, args.context)
        chunks = await cb.chunks(repo.id)
        out: dict[str, Any] = {
            "chunks": len(chunks),
            "files": indexed.files_indexed,
            "index_s": round(index_s, 2),
        }
        for mode in args.modes:
            for variant, cfg in variants.items():
                svc = await bench.search_service(ranking=cfg.ranking, fusion=cfg.fusion)
                scores: list[dict[str, Any]] = []
                for q in queries:
                    targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
                    n_rel = covered_targets(chunks, targets)
                    query = SearchQuery.build(q["query"], mode=mode, limit=10)
                    result = await svc.search(query)
                    if result.mode is not SearchMode(mode):
                        raise SystemExit(f"{spec['name']}: asked {mode}, searched {result.mode}")
                    score = ndcg_at_10(result.hits, targets, n_rel)
                    row = {"category": category(q), "ndcg": score, "ms": result.latency_ms}
                    if args.show_misses and score < 0.5:
                        row["query"] = q["query"]
                        row["top"] = [f"{h.file_path}:{h.start_line}" for h in result.hits[:5]]
                        row["want"] = [t if isinstance(t, str) else t["path"] for t in targets]
                    scores.append(row)
                out[f"{mode}/{variant}"] = scores
    return out


def summarise(
    per_repo: dict[str, dict[str, Any]], langs: dict[str, str], key: str
) -> dict[str, Any]:
    repo_means: dict[str, float] = {}
    cats: dict[str, list[float]] = defaultdict(list)
    latencies: list[float] = []
    for name, r in per_repo.items():
        rows = r[key]
        repo_means[name] = statistics.fmean(x["ndcg"] for x in rows)
        # Per category: the benchmark's repository-then-mean rule within each category.
        per_cat: dict[str, list[float]] = defaultdict(list)
        for x in rows:
            per_cat[x["category"]].append(x["ndcg"])
            latencies.append(x["ms"])
        for c, v in per_cat.items():
            cats[c].append(statistics.fmean(v))
    by_lang: dict[str, list[float]] = defaultdict(list)
    for name, mean in repo_means.items():
        by_lang[langs[name]].append(mean)
    latencies.sort()
    return {
        "ndcg@10": round(statistics.fmean(repo_means.values()), 4),
        "by_category": {c: round(statistics.fmean(v), 4) for c, v in sorted(cats.items())},
        "by_language": {k: round(statistics.fmean(v), 4) for k, v in sorted(by_lang.items())},
        "by_repository": {k: round(v, 4) for k, v in sorted(repo_means.items())},
        "latency_ms_p50": round(statistics.median(latencies), 2),
        "latency_ms_p95": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    specs = json.loads((args.bench_dir / "repos.json").read_text())
    if args.repos:
        wanted = set(args.repos.split(","))
        specs = [s for s in specs if s["name"] in wanted]
    variants = ranking_variants(args.variants, ABLATIONS if args.ablate else None)
    per_repo: dict[str, dict[str, Any]] = {}
    for spec in specs:
        queries = json.loads((args.bench_dir / "annotations" / f"{spec['name']}.json").read_text())
        per_repo[spec["name"]] = await run_repo(spec, queries, args, variants)
        first = f"{args.modes[0]}/default"
        mean = statistics.fmean(x["ndcg"] for x in per_repo[spec["name"]][first])
        print(f"{spec['name']:16} {first}: {mean:.4f}", flush=True)
    langs = {s["name"]: s["language"] for s in specs}
    out: dict[str, Any] = {
        "embedder": args.embedder,
        "onnx_max_tokens": args.max_tokens,
        "context": args.context,
        "context_embedding": context_text.summary() if args.context else None,
        "repositories": len(per_repo),
        "queries": sum(len(next(iter(r[k] for k in r if "/" in k))) for r in per_repo.values()),
        "published_dev_half": PUBLISHED,
        "index": {
            n: {k: r[k] for k in ("files", "chunks", "index_s")} for n, r in per_repo.items()
        },
    }
    for mode in args.modes:
        for variant in variants:
            out[f"{mode}/{variant}"] = summarise(per_repo, langs, f"{mode}/{variant}")
    if args.show_misses:
        out["misses"] = {
            n: [x for x in r[f"{args.modes[0]}/default"] if "query" in x]
            for n, r in per_repo.items()
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--embedder", default="onnx")
    p.add_argument(
        "--max-tokens", type=int, default=None, help="the ONNX model's token budget per chunk"
    )
    p.add_argument("--modes", default="lexical,hybrid", type=lambda s: s.split(","))
    p.add_argument("--repos", default=None, help="comma-separated names (default: all)")
    p.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    p.add_argument("--ablate", action="store_true", help="also score each ablation")
    p.add_argument(
        "--variants", default=None, help='more configurations: {"name": {field: value}, ...}'
    )
    p.add_argument("--show-misses", action="store_true")
    p.add_argument(
        "--context",
        default=None,
        choices=sorted(context_text.VARIANTS),
        help="embed a header (path, or path and symbol) before each chunk's text",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args()
    context_text.install(args.context)
    if "lexical" in args.modes and args.embedder != "none" and args.modes == ["lexical"]:
        args.embedder = "none"  # a lexical-only run needs no model
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
