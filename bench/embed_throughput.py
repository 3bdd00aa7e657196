"""Indexing rate with a real model vs the model's raw encode rate, on the same chunks, in one run.

The repository (default: a slice of this Python's standard library) is indexed end to end with
the local embedder (all-MiniLM-L6-v2 via sentence-transformers) into a fresh embedded Postgres
project: scan, chunk, embed, write, ANN build. Then the very texts that run embedded are
encoded again by sentence-transformers directly (``SentenceTransformer.encode``, the same
batch size, normalised), with nothing else running. The two alternate (index, raw, index,
raw) so that drift of a shared machine touches both; the report gives each run and the ratio
of the medians.

    python -m bench.embed_throughput [--source DIR ...] [--runs 2] [--batch-files 8] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.retrieval import emit
from entrypoints.container import running_container
from entrypoints.settings import Settings

STDLIB = Path(sysconfig.get_paths()["stdlib"])
DEFAULT_SOURCES = [str(STDLIB / d) for d in ("json", "email", "logging", "http", "urllib")]


async def _index(
    root: Path, data_dir: Path, project: str, batch: int, batch_files: int
) -> dict[str, Any]:
    settings = Settings(
        store="postgres",
        embedder="local",
        data_dir=data_dir,
        project=project,
        embedding_batch_size=batch,
        index_batch_files=batch_files,
    )
    async with running_container(settings) as container:
        embedder = await container.embedder()
        indexing = await container.indexing_service()
        store = await container.chunk_store()
        t0 = time.perf_counter()
        result = await indexing.index(str(root))
        seconds = time.perf_counter() - t0
        texts: dict[str, str] = {}
        for c in await store.chunks(result.repository_id):
            texts.setdefault(c.content_hash, c.content)
        return {
            "seconds": seconds,
            "files": result.files_indexed,
            "chunks": result.chunks_created,
            "embedded": result.chunks_embedded,
            "truncated": result.chunks_truncated,
            "texts": list(texts.values()),
            "model": embedder._model,
        }


def _raw(model: Any, texts: list[str], batch: int) -> float:
    t0 = time.perf_counter()
    model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - t0


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="embed-throughput-") as tmp:
        root = Path(tmp) / "repo"
        for src in args.source:
            shutil.copytree(
                src, root / Path(src).name, ignore=shutil.ignore_patterns("__pycache__")
            )
        runs: list[dict[str, Any]] = []
        raws: list[float] = []
        texts: list[str] = []
        model: Any = None
        for i in range(args.runs):
            # A fresh project each time: nothing comes from the embedding cache.
            indexed = await _index(
                root, Path(tmp) / "data", f"throughput-{i}", args.batch, args.batch_files
            )
            model, texts = indexed.pop("model"), indexed.pop("texts")
            runs.append(indexed)
            raws.append(_raw(model, texts, args.batch))
        index_rate = statistics.median(r["embedded"] / r["seconds"] for r in runs)
        raw_rate = statistics.median(len(texts) / s for s in raws)
        return {
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "sources": [Path(s).name for s in args.source],
            "batch_size": args.batch,
            "index_batch_files": args.batch_files,
            "files": runs[0]["files"],
            "chunks": runs[0]["chunks"],
            "texts_embedded": len(texts),
            "truncated": runs[0]["truncated"],
            "index_seconds": [round(r["seconds"], 1) for r in runs],
            "raw_encode_seconds": [round(s, 1) for s in raws],
            "index_chunks_per_s": round(index_rate, 1),
            "raw_chunks_per_s": round(raw_rate, 1),
            "index_vs_raw": round(index_rate / raw_rate, 3),
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", action="append", default=None)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    # Several indexing batches, so that chunking and writes overlapping the model is measured
    # (the 49 default files would be one batch of the default 64).
    p.add_argument("--batch-files", type=int, default=8)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.source = args.source or DEFAULT_SOURCES
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
