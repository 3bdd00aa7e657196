"""Tune hybrid fusion with a real embedding model on CoSQA (dev, 500 queries) and our own eval
(60 queries over rich, pytest, pathspec).

Both corpora are indexed with the project's pipeline into Postgres under --data-dir (kept, so a
second run reuses the embedding cache and costs only the queries). Every query's semantic and
lexical candidate lists are retrieved once, at the largest depth any variant needs; each fusion
variant then re-ranks them through ``SearchService`` exactly as a search would (same fusion,
same near-duplicate collapsing), so the figures are those the product gives with that setting.

    python -m bench.tune_fusion [--embedder local] [--data-dir /tmp/tune-fusion]
                                [--header] [--out bench/results/fusion_tuning_minilm.json]

--header also measures embedding a chunk with a header line (its path and symbol) before its
text, by exact cosine over the corpus in numpy (an offline experiment; the product embeds the
chunk text alone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.cosqa_eval import DEFAULT_DATA, write_corpus
from bench.own_eval import QUERIES as OWN_QUERIES
from bench.replay_store import RecordingStore
from bench.retrieval import emit, metrics, rank_of
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import (
    Chunk,
    Embeddings,
    IndexRequest,
    SearchMode,
    SearchQuery,
)
from codebase_mcp_search.core.ports import ChunkStore, Embedder
from codebase_mcp_search.core.services import SearchService
from codebase_mcp_search.entrypoints.container import running_container
from codebase_mcp_search.entrypoints.settings import Settings

MAX_DEPTH = 100


class _QueryCache:
    """An embedder proxy that embeds each query once."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._queries: dict[str, list[float]] = {}
        self.model, self.dimension = embedder.model, embedder.dimension

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        return await self._embedder.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        if text not in self._queries:
            self._queries[text] = await self._embedder.embed_query(text)
        return self._queries[text]


def variants() -> dict[str, FusionConfig]:
    out: dict[str, FusionConfig] = {"default": FusionConfig()}
    for k in (10, 30, 60):
        for wl in (1.0, 0.5, 0.3, 0.2):
            for mult in (3, 5, 10):
                out[f"rrf k={k} wl={wl} x{mult}"] = FusionConfig(
                    method="rrf",
                    rrf_k=k,
                    lexical_weight=wl,
                    candidates=min(MAX_DEPTH, 10 * mult),
                    min_candidates=min(MAX_DEPTH, 10 * mult),
                )
    for norm in ("none", "minmax"):
        for wl in (1.0, 0.7, 0.5, 0.4, 0.3, 0.2, 0.1):
            for mult in (3, 5, 10):
                out[f"linear {norm} wl={wl} x{mult}"] = FusionConfig(
                    method="linear",
                    normalisation=norm,
                    lexical_weight=wl,
                    candidates=min(MAX_DEPTH, 10 * mult),
                    min_candidates=min(MAX_DEPTH, 10 * mult),
                )
    return out


Query = tuple[str, str | None, str, int, int]  # text, repository id, gold path, start, end


async def _ranks(
    service: SearchService, queries: list[Query], mode: SearchMode
) -> list[int | None]:
    ranks: list[int | None] = []
    for text, repo_id, path, start, end in queries:
        q = SearchQuery.build(text, mode=mode.value, limit=10, repository_id=repo_id)
        result = await service.search(q)
        ranks.append(rank_of(list(result.hits), path, start, end))
    return ranks


def _own_corpus(root: Path) -> tuple[dict[str, Path], list[dict[str, Any]]]:
    import importlib
    import importlib.metadata

    spec = json.loads(OWN_QUERIES.read_text())
    roots: dict[str, Path] = {}
    for name, c in spec["corpora"].items():
        dist = c.get("distribution", c["package"])
        if importlib.metadata.version(dist) != c["version"]:
            raise SystemExit(f"{dist} {c['version']} is needed for the gold line ranges")
        src = Path(importlib.import_module(c["package"]).__file__ or "").parent
        roots[name] = root / name
        if not roots[name].exists():
            shutil.copytree(src, roots[name], ignore=shutil.ignore_patterns("__pycache__"))
    return roots, spec["queries"]


async def _header_experiment(
    store: ChunkStore, embedder: Embedder, repo_ids: list[str], queries: list[Query], cache: Path
) -> dict[str, Any]:
    """Semantic MRR by exact cosine, chunk text alone vs. a path/symbol header before it."""
    chunks: list[Chunk] = []
    for rid in repo_ids:
        chunks.extend(await store.chunks(rid))
    out: dict[str, Any] = {}
    qv = np.array([await embedder.embed_query(q[0]) for q in queries])
    for variant in ("content", "header"):
        path = cache.with_name(f"{cache.stem}-{variant}.npy")
        if variant == "content":  # the vectors indexing stored
            known = await store.cached_embeddings(
                embedder.model, sorted({c.content_hash for c in chunks})
            )
            vectors = np.array([known[c.content_hash] for c in chunks])
        elif path.exists():
            vectors = np.load(path)
        else:
            texts = [f"{c.file_path}: {c.symbol or ''}\n{c.content}" for c in chunks]
            vectors = np.array((await embedder.embed_documents(texts)).vectors)
            np.save(path, vectors)
        scores = qv @ vectors.T
        ranks: list[int | None] = []
        for i, (_, repo_id, gold, start, end) in enumerate(queries):
            order = np.argsort(-scores[i])
            hits = [
                chunks[j] for j in order if repo_id is None or chunks[j].repository_id == repo_id
            ][:10]
            ranks.append(rank_of(list(hits), gold, start, end))
        out[variant] = metrics(ranks)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = Path(args.data_dir)
    corpora = data_dir / "corpora"
    cosqa_queries, _ = write_corpus(Path(args.data), corpora / "cosqa")
    own_roots, own_spec = _own_corpus(corpora / "own")
    settings = Settings(
        store="postgres",
        embedder=args.embedder,
        data_dir=data_dir,
        project="fusion-tuning",
        chunk_min_tokens=args.chunk_min_tokens,
    )
    async with running_container(settings) as container:
        store = await container.chunk_store()
        embedder = await container.embedder()
        indexing = await container.indexing_service()
        t0 = time.perf_counter()
        # --force re-chunks (after a chunking setting changed); unchanged texts keep their
        # cached vectors.
        cosqa = await indexing.index(IndexRequest.build(str(corpora / "cosqa"), force=args.force))
        own_ids = {
            n: (await indexing.index(IndexRequest.build(str(r), force=args.force))).repository_id
            for n, r in own_roots.items()
        }
        index_s = time.perf_counter() - t0
        sets: dict[str, list[Query]] = {
            "cosqa": [(t, cosqa.repository_id, g.path, g.start, g.end) for t, g in cosqa_queries],
            "own": [
                (q["query"], own_ids[q["corpus"]], q["path"], q["start_line"], q["end_line"])
                for q in own_spec
            ],
        }
        recorded = RecordingStore(store, MAX_DEPTH)
        cached = _QueryCache(embedder)
        result: dict[str, Any] = {
            "embedder": embedder.model,
            "index_seconds": round(index_s, 1),
            "chunk_min_tokens": args.chunk_min_tokens,
            "chunks": {"cosqa": len(await store.chunks(cosqa.repository_id))},
            "single": {},
            "fusion": {},
        }
        plain = SearchService(recorded, cached)  # type: ignore[arg-type]
        for name, queries in sets.items():
            result["single"][name] = {
                m.value: metrics(await _ranks(plain, queries, m))
                for m in (SearchMode.SEMANTIC, SearchMode.LEXICAL)
            }
        for label, config in variants().items():
            service = SearchService(recorded, cached, config)  # type: ignore[arg-type]
            result["fusion"][label] = {
                name: metrics(await _ranks(service, queries, SearchMode.HYBRID))
                for name, queries in sets.items()
            }
        if args.header:
            result["header_experiment"] = {
                name: await _header_experiment(
                    store,
                    embedder,
                    sorted({q[1] for q in queries if q[1]}),
                    queries,
                    data_dir / f"vectors-{name}.npy",
                )
                for name, queries in sets.items()
            }
        best = max(
            result["fusion"].items(),
            key=lambda kv: kv[1]["cosqa"]["mrr@10"] + kv[1]["own"]["mrr@10"],
        )
        result["best_by_sum_of_mrr"] = {"variant": best[0], **best[1]}
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--embedder", default="local", choices=["local", "ollama", "openai", "hash"])
    p.add_argument("--data-dir", default="/tmp/tune-fusion")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--header", action="store_true")
    p.add_argument("--chunk-min-tokens", type=int, default=Settings().chunk_min_tokens)
    p.add_argument("--force", action="store_true", help="re-chunk every file first")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.data_dir = str(Path(args.data_dir).resolve())
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
