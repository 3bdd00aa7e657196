"""Client-side CPU work of indexing, without a store: chunking and hashing-embedding.

Generates the repository of ``bench.index_throughput`` (deterministic), then, in a fresh
process per run (so that no memo carries over, as in a first index), reads every file, times
chunking them all with ``TreeSitterChunker(TiktokenCounter())`` and then
``HashingEmbedder(384).embed_documents`` over every chunk in batches of --batch. Reports
medians of --runs runs, wall clock (``*_seconds``) and process CPU time (``*_cpu``: steadier
on a machine shared with other work).

    python -m bench.cpu_pipeline [--files 10000] [--runs 3] [--batch 256] [--out bench/results/x.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.index_throughput import generate
from bench.retrieval import emit
from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker


def _read(root: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(root).as_posix(), p.read_text()) for p in sorted(root.rglob("*.py"))]


async def _one_run(files: list[tuple[str, str]], batch: int) -> dict[str, float]:
    chunker = TreeSitterChunker(TiktokenCounter())
    t, cpu = time.perf_counter(), time.process_time()
    contents = [c.content for path, text in files for c in chunker.chunk(path, text, "python")]
    chunk = {"chunk_seconds": time.perf_counter() - t, "chunk_cpu": time.process_time() - cpu}
    embedder = HashingEmbedder(384)
    t, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(contents), batch):
        await embedder.embed_documents(contents[i : i + batch])
    embed = {"embed_seconds": time.perf_counter() - t, "embed_cpu": time.process_time() - cpu}
    return {"chunks": len(contents), **chunk, **embed}


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cpu-pipeline-") as tmp:
        root = Path(tmp) / "repo"
        size = generate(root, args.files)
        runs = []
        for _ in range(args.runs):
            worker = [sys.executable, "-m", "bench.cpu_pipeline", "--worker", str(root)]
            done = subprocess.run(
                [*worker, "--batch", str(args.batch)], check=True, capture_output=True, text=True
            )
            runs.append(json.loads(done.stdout))
    result: dict[str, Any] = {"files": args.files, "bytes": size, "chunks": runs[0]["chunks"]}
    for step in ("chunk", "embed"):
        for measure in ("seconds", "cpu"):
            values = [r[f"{step}_{measure}"] for r in runs]
            result[f"{step}_{measure}_median"] = round(statistics.median(values), 2)
            result[f"{step}_{measure}_all"] = [round(x, 2) for x in values]
    result["embed_batch"] = args.batch
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--out", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_one_run(_read(Path(args.worker)), args.batch))))
    else:
        emit(run(args), args.out)


if __name__ == "__main__":
    main()
