"""Search quality while the semantic layer is being built: hybrid NDCG@10 on the repo-search
development half (and MRR@10 on CoSQA dev) with vectors for a share of the chunks only, beside
lexical search, through the product's own search service over a real (memory) store.

Each repository is indexed lexically (the first layer), then vectors (from the cache under
``bench/.cache``, the model's where it misses) are stored for a growing random share of its
chunks, as the semantic layer's backfill does: every coverage level is measured over the same
index, for each seed a random order of the chunks whose first ``level%`` get their vector.
With no vector stored, a hybrid search answers lexically: 0% is lexical's figure by
construction, and each level must be at least that.

    python -m bench.coverage [--levels 0,25,50,100] [--seeds 3] [--repos gin,zod]
        [--no-cosqa] [--embedder onnx] [--out bench/results/coverage.json]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from bench import repo_search
from bench.cosqa_eval import DEFAULT_DATA, write_corpus
from bench.harness import Bench, open_bench
from bench.retrieval import emit, metrics, rank_of
from codebase_mcp_search.core.models import Chunk, SearchQuery, SearchResult
from codebase_mcp_search.entrypoints.settings import Settings

Scorer = Callable[[str], Awaitable[list[float]]]
"""Scores every query of a benchmark in one mode (``lexical`` or ``hybrid``)."""


async def _vectors_of(bench: Bench, chunks: Sequence[Chunk]) -> dict[str, list[float]]:
    """Every chunk's vector, by content hash: the cached ones, and the model's for the rest."""
    embedder = await bench.embedder()
    if embedder is None:
        raise SystemExit("--embedder none: there is no semantic layer to measure")
    hashes = sorted({c.content_hash for c in chunks})
    found = await bench.store.cached_embeddings(embedder.model, hashes)
    todo = [c for c in {c.content_hash: c for c in chunks}.values() if c.content_hash not in found]
    if todo:
        made = (await embedder.embed_documents([c.content for c in todo])).vectors
        found.update({c.content_hash: list(v) for c, v in zip(todo, made, strict=True)})
    return {h: [float(x) for x in found[h]] for h in hashes}


Opener = Callable[[], AbstractAsyncContextManager[Bench]]
"""A fresh bench (memory store, the embedder, an empty embedding cache)."""


async def _lexical_layer(bench: Bench, root: Path) -> tuple[str, list[Chunk]]:
    """``root`` indexed lexically into an empty store: no chunk holds a vector yet."""
    repo_id = (await bench.codebase.index(root, vectors=False)).repository_id
    repository = await bench.codebase.repository(repo_id)
    assert repository.vector_count == 0, "the lexical layer took vectors from a cache"
    return repo_id, await bench.store.chunks(repo_id)


async def _measure(
    open_one: Opener,
    root: Path,
    levels: list[int],
    seeds: int,
    scorer_of: Callable[[Bench], Scorer],
    cache: Path,
) -> dict[str, Any]:
    """Lexical, then hybrid at each coverage level: 0 and 100% once, a level between them as
    the mean over ``seeds`` random orders. Each seed indexes into a fresh store, whose
    embedding cache is filled only after the lexical layer is written (else the lexical run
    would take every vector from it)."""
    by_level: dict[int, list[float]] = {level: [] for level in levels}
    between = [level for level in levels if 0 < level < 100]
    vectors: dict[str, list[float]] = {}
    lexical = 0.0
    n_chunks = 0
    for seed in range(max(1, seeds if between else 1)):
        async with open_one() as bench:
            repo_id, chunks = await _lexical_layer(bench, root)
            score = scorer_of(bench)
            if seed == 0:
                n_chunks = len(chunks)
                lexical = statistics.fmean(await score("lexical"))
                if 0 in by_level:
                    by_level[0].append(statistics.fmean(await score("hybrid")))
                await repo_search._seed_vectors(bench, cache)
                vectors = await _vectors_of(bench, chunks)
            order = list(chunks)
            random.Random(seed).shuffle(order)
            stored = 0
            for level in between:
                upto = round(len(order) * level / 100)
                given = {c.id: vectors[c.content_hash] for c in order[stored:upto]}
                await bench.store.set_vectors(repo_id, given)
                stored = upto
                covered = (await bench.codebase.repository(repo_id)).vector_count
                assert covered == upto, (covered, upto)
                by_level[level].append(statistics.fmean(await score("hybrid")))
            if seed == 0 and 100 in by_level:
                rest = {c.id: vectors[c.content_hash] for c in order[stored:]}
                await bench.store.set_vectors(repo_id, rest)
                assert (await bench.codebase.repository(repo_id)).vectors_missing == 0
                by_level[100].append(statistics.fmean(await score("hybrid")))
    return {
        "chunks": n_chunks,
        "lexical": lexical,
        "hybrid": {str(k): statistics.fmean(v) for k, v in sorted(by_level.items())},
        "hybrid_by_seed": {str(k): v for k, v in sorted(by_level.items())},
    }


def _repo_scorer(bench: Bench, queries: list[dict[str, Any]]) -> Scorer:
    """NDCG@10 of each repo-search query, by the benchmark's rules."""
    chunks: list[Chunk] = []  # the targets some chunk covers: the same at every level

    async def score(mode: str) -> list[float]:
        if not chunks:
            (repo,) = await bench.codebase.repositories()
            chunks.extend(await bench.store.chunks(repo.id))
        service = await bench.search_service()
        scores = []
        for q in queries:
            targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
            result = await service.search(SearchQuery.build(q["query"], mode=mode))
            n_rel = repo_search.covered_targets(chunks, targets)
            scores.append(repo_search.ndcg_at_10(result.hits, targets, n_rel))
        return scores

    return score


def _opener(args: argparse.Namespace) -> Opener:
    return lambda: open_bench(Settings(store="memory", embedder=args.embedder))


async def repo_bench(args: argparse.Namespace, levels: list[int]) -> dict[str, Any]:
    specs = json.loads((args.bench_dir / "repos.json").read_text())
    if args.repos:
        specs = [s for s in specs if s["name"] in args.repos.split(",")]
    per_repo: dict[str, Any] = {}
    for spec in specs:
        root = args.bench_dir / "repos" / spec["name"]
        if spec.get("benchmark_root"):
            root = root / spec["benchmark_root"]
        queries = json.loads((args.bench_dir / "annotations" / f"{spec['name']}.json").read_text())
        cache = repo_search.CACHE / f"repo_search_{args.embedder}_{spec['name']}.npz"
        per_repo[spec["name"]] = await _measure(
            _opener(args),
            root,
            levels,
            args.seeds,
            functools.partial(_repo_scorer, queries=queries),
            cache,
        )
        line = per_repo[spec["name"]]
        print(
            f"{spec['name']:16} lexical {line['lexical']:.4f} hybrid {line['hybrid']}", flush=True
        )
    return {
        "repositories": len(per_repo),
        "ndcg@10": {
            "lexical": round(statistics.fmean(r["lexical"] for r in per_repo.values()), 4),
            **{
                f"hybrid@{level}%": round(
                    statistics.fmean(r["hybrid"][str(level)] for r in per_repo.values()), 4
                )
                for level in levels
            },
        },
        "by_repository": per_repo,
    }


async def cosqa_bench(args: argparse.Namespace, levels: list[int]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cosqa-") as tmp:
        root = Path(tmp) / "cosqa"
        queries, _ = write_corpus(Path(args.cosqa_data), root)
        cache = repo_search.CACHE / f"replay_{args.embedder}_cosqa.npz"

        def scorer_of(bench: Bench) -> Scorer:
            async def score(mode: str) -> list[float]:
                service = await bench.search_service()
                ranks = []
                for text, gold in queries:
                    result: SearchResult = await service.search(SearchQuery.build(text, mode=mode))
                    ranks.append(rank_of(result.hits, gold.path, gold.start, gold.end))
                # One figure per benchmark: MRR@10 (repeated so the mean over "queries" is it).
                return [metrics(ranks)["mrr@10"]]

            return score

        found = await _measure(_opener(args), root, levels, args.seeds, scorer_of, cache)
    return {
        "mrr@10": {
            "lexical": round(found["lexical"], 4),
            **{f"hybrid@{k}%": round(v, 4) for k, v in found["hybrid"].items()},
        },
        "hybrid_by_seed": found["hybrid_by_seed"],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    levels = sorted({int(x) for x in args.levels.split(",")})
    out: dict[str, Any] = {"embedder": args.embedder, "levels": levels, "seeds": args.seeds}
    out["repo_search_dev"] = await repo_bench(args, levels)
    print(json.dumps(out["repo_search_dev"]["ndcg@10"]), flush=True)
    if not args.no_cosqa:
        out["cosqa_dev"] = await cosqa_bench(args, levels)
        print(json.dumps(out["cosqa_dev"]["mrr@10"]), flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--levels", default="0,25,50,100")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--repos", default=None)
    p.add_argument("--embedder", default="onnx")
    p.add_argument("--bench-dir", type=Path, default=repo_search.DEFAULT_BENCH)
    p.add_argument("--cosqa-data", default=str(DEFAULT_DATA))
    p.add_argument("--no-cosqa", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
