"""Search latency at ~100,000 chunks in embedded Postgres, per mode, with and without filters.

Indexes a generated repository (``bench.index_throughput.generate``; --files 16000 gives about
100,000 chunks; its 49-word vocabulary puts every query term in half the chunks, the worst case
for BM25) or a real source tree (--source DIR, queried with CoSQA's real web questions) with
the hashing embedder (384-d), then
times ``Codebase.search`` end to end (SQL, fusion, context lines) for every query in every mode,
with no filter and with a directory filter. Query vectors are computed before timing (a
wrapping embedder answers from a dict), so the figures exclude query embedding, as the target
says. Reports p50/p95 in milliseconds over --repeat passes of the query set, each pass with
the store's in-process caches emptied first (every pass asks the same questions; with
--warm, filled by one untimed pass and kept, as in a long-running server). With
--unranked, each query is also searched with the ranking stack off, right beside the ranked
search (which goes first alternates), so both see the same caches and the same hour.

    python -m bench.search_latency [--files 16000 | --source DIR] [--unranked] [--warm]
        [--limit 10]
        [--baseline '{"hollow_prior": 1.0}'] [--baseline-stem-weight 0]
        [--out bench/results/x.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import open_bench
from bench.index_throughput import VERBS, WORDS, generate
from bench.retrieval import emit, ranking_variants
from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.core.models import Embeddings, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.entrypoints.settings import Settings, cli_index_workers


class _Precomputed:
    """An embedder whose query vectors were computed before the clock started."""

    def __init__(self, inner: HashingEmbedder, vectors: dict[str, list[float]]) -> None:
        self._inner = inner
        self._vectors = vectors

    @classmethod
    async def of(cls, inner: HashingEmbedder, queries: Sequence[str]) -> _Precomputed:
        return cls(inner, {q: await inner.embed_query(q) for q in queries})

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        return self._vectors[text]


def queries(n: int, seed: int = 3) -> list[str]:
    """Natural-language and identifier queries over the generator's vocabulary."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        v, a, b = rng.choice(VERBS), rng.choice(WORDS), rng.choice(WORDS)
        if i % 3 == 0:
            out.append(f"{v}_{a}_{b}")
        elif i % 3 == 1:
            out.append(f"how to {v} the {a} for each {b}")
        else:
            out.append(f"{a} {b} {rng.choice(WORDS)}")
    return out


COSQA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "cosqa"


def cosqa_queries(n: int) -> list[str]:
    """The first ``n`` CoSQA dev queries: real web questions about Python code."""
    data = json.loads((COSQA / "cosqa-retrieval-dev-500.json").read_text())
    return [q["doc"] for q in data[:n]]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 2)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    qs = cosqa_queries(args.queries) if args.source else queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="latency-") as scratch:
        # --keep DIR reuses the generated repository and the index between runs.
        tmp = Path(args.keep) if args.keep else Path(scratch)
        if args.source:
            root = tmp / "source"
            if not root.exists():  # copies without nested installed packages and bytecode
                for name, src in args.source:
                    shutil.copytree(
                        src,
                        root / name,
                        ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
                    )
        else:
            root = tmp / "repo"
            if not root.exists():
                generate(root, args.files)
        settings = Settings(
            embedder="hash",
            data_dir=tmp / "data",
            database_url=None,
            index_workers=cli_index_workers(),  # as the CLI does
        )
        source = ", ".join(src for _, src in args.source or [])
        out: dict[str, Any] = {"source": source or f"generated {args.files} files"}
        async with open_bench(settings) as bench:
            cb = bench.codebase
            t = time.perf_counter()
            result = await cb.index(root)
            out["index_seconds"] = round(time.perf_counter() - t, 1)
            repos = await cb.repositories()
            out["chunks"] = sum(r.chunk_count for r in repos)
            directories = args.directory or [_busiest_directory(root)]
            out["directory_filters"] = {
                d: sum(1 for _ in (root / d).rglob("*") if _.is_file()) for d in directories
            }
            # Precomputed query vectors (same model name, so no mismatch).
            precomputed = await _Precomputed.of(HashingEmbedder(384), qs)
            ranked = await bench.search_service(embedder=precomputed)
            services = {"": ranked}
            if args.unranked:
                services["/unranked"] = await bench.search_service(
                    embedder=precomputed, ranking=RankingConfig(enabled=False)
                )
            if args.baseline or args.baseline_stem_weight is not None:
                base = ranking_variants(None, {"b": json.loads(args.baseline or "{}")})["b"]
                services["/baseline"] = await bench.search_service(
                    embedder=precomputed,
                    ranking=base.ranking,
                    fusion=base.fusion,
                    stem_weight=args.baseline_stem_weight,
                )
            for q in qs[:5]:  # warm the pool and plans
                await ranked.search(SearchQuery.build(q))
            order = list(services.items())
            for mode in ("semantic", "lexical", "hybrid"):
                for label, flt in [
                    ("none", None),
                    *((f"directory={d}", d) for d in directories),
                ]:
                    lat: dict[str, list[float]] = {suffix: [] for suffix in services}
                    # This process's CPU per search (its threads included): the server's
                    # own cost, less bent by other work on a shared machine than the clock.
                    cpu: dict[str, float] = dict.fromkeys(services, 0.0)
                    for rep in range(-1 if args.warm else 0, args.repeat):
                        # Each pass from cold in-process caches (the chunks a store keeps
                        # read): every pass asks the same questions, which no user does.
                        # With --warm, one untimed pass fills them and none is emptied: a
                        # long-running server's steady state.
                        drop_caches = getattr(bench.store, "drop_caches", None)
                        if drop_caches is not None and not args.warm:
                            drop_caches()
                        for i, q in enumerate(qs):
                            query = SearchQuery.build(q, mode=mode, limit=args.limit, directory=flt)
                            # Ranked and unranked answer each query back to back, first by
                            # turns: run one after the other, the second met the caches the
                            # first had warmed, and a slower hour of the machine.
                            turn = order if (i + rep) % 2 == 0 else order[::-1]
                            for suffix, service in turn:
                                if rep < 0:
                                    await service.search(query)
                                    continue
                                t, c = time.perf_counter(), time.process_time()
                                await service.search(query)
                                lat[suffix].append((time.perf_counter() - t) * 1000.0)
                                cpu[suffix] += time.process_time() - c
                    for suffix, samples in lat.items():
                        out[f"{mode}/{label}{suffix}"] = {
                            "p50_ms": _pct(samples, 0.5),
                            "p95_ms": _pct(samples, 0.95),
                            "mean_ms": round(statistics.fmean(samples), 2),
                            "cpu_ms": round(cpu[suffix] * 1000.0 / len(samples), 2),
                            "n": len(samples),
                        }
            out["index_status"] = result.status.value
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        stop_embedded(tmp / "data" / "postgres")
    return out


def _busiest_directory(root: Path) -> str:
    counts: dict[str, int] = {}
    for p in root.rglob("*"):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            if "/" in rel:
                top = rel.split("/", 1)[0]
                counts[top] = counts.get(top, 0) + 1
    return max(sorted(counts), key=lambda d: counts[d]) if counts else ""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=16_000)
    p.add_argument(
        "--source",
        action="append",
        help="index this directory instead, repeatable ('stdlib': Python's own library, "
        "'site': the installed packages of this interpreter)",
    )
    p.add_argument(
        "--directory", action="append", help="directory filter, repeatable (default: busiest)"
    )
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--limit", type=int, default=10, help="answers asked of each search")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument(
        "--warm",
        action="store_true",
        help="keep the in-process caches: one untimed pass fills them, none is emptied",
    )
    p.add_argument("--keep", default=None, help="keep repository and index in this folder")
    p.add_argument(
        "--unranked", action="store_true", help="also time every cell with the ranking stack off"
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="also time every cell with this ranking (JSON of RankingConfig fields, "
        '"fusion": {FusionConfig fields}), query by query beside the default',
    )
    p.add_argument(
        "--baseline-stem-weight",
        type=float,
        default=None,
        help="the baseline's lexical stem weight (0: no stem groups); alone, the baseline is "
        "the default ranking with it",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args()
    named = {"stdlib": sysconfig.get_paths()["stdlib"], "site": sysconfig.get_paths()["purelib"]}
    # (folder name in the copy, source directory): 'stdlib'/'site' keep their names.
    args.source = [
        (
            arg if arg in named else Path(arg).resolve().name,
            str(Path(named.get(arg, arg)).resolve()),
        )
        for arg in args.source or []
    ]
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
