"""The default ONNX embedder against the torch one, on the same chunks, in one run.

The repository (default: a slice of this Python's standard library) is indexed end to end into
a fresh embedded Postgres project (scan, chunk, embed, write, ANN build; the server is started
and the project's schema made before the clock starts), then the very texts
that run embedded are embedded again by the same embedder alone (``embed_documents``, nothing
else running): the raw model rate. Each run is a fresh process, so its model load time
(import included) and peak resident memory are its own. Runs alternate (onnx, local, onnx,
local) so that drift of a shared machine touches both; the report gives each run and medians.
The ONNX model's int8 graph is derived once before the first run (as on a first use), so the
runs load it from the cache, as every later process does.

    python -m bench.embed_throughput [--source DIR ...] [--runs 2] [--embedders onnx,local]
                                     [--batch-files 8] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.retrieval import emit

STDLIB = Path(sysconfig.get_paths()["stdlib"])
DEFAULT_SOURCES = [str(STDLIB / d) for d in ("json", "email", "logging", "http", "urllib")]


async def _child(args: argparse.Namespace) -> dict[str, Any]:
    """One run in this (fresh) process: load, index, raw encode."""
    from codebase_mcp_search.entrypoints.container import running_container
    from codebase_mcp_search.entrypoints.requests import index_request
    from codebase_mcp_search.entrypoints.settings import Settings

    settings = Settings(
        store="postgres",
        embedder=args.child,
        data_dir=Path(args.data_dir),
        project=args.project,
        embedding_batch_size=args.batch,
        index_batch_files=args.batch_files,
    )
    async with running_container(settings) as container:
        # The model's load: importing its runtime (torch or onnxruntime; the adapters import
        # it when they open) and reading the weights.
        t0 = time.perf_counter()
        embedder = await container.embedder()
        load_s = time.perf_counter() - t0
        indexing = await container.indexing_service()
        store = await container.chunk_store()
        # The server started and the project's schema made, as for any index but a project's
        # first: the run times indexing, not setting up a database.
        await store.list_repositories()
        t0 = time.perf_counter()
        result = await indexing.index(index_request(args.root))
        index_s = time.perf_counter() - t0
        texts: dict[str, str] = {}
        for c in await store.chunks(result.repository_id):
            texts.setdefault(c.content_hash, c.content)
        t0 = time.perf_counter()
        raw = await embedder.embed_documents(list(texts.values()))
        raw_s = time.perf_counter() - t0
    return {
        "embedder": args.child,
        "model": embedder.model,
        "load_seconds": round(load_s, 2),
        "index_seconds": round(index_s, 1),
        "raw_seconds": round(raw_s, 1),
        "files": result.files_indexed,
        "chunks": result.chunks_created,
        "embedded": result.chunks_embedded,
        "truncated": result.chunks_truncated,
        "texts": len(texts),
        "raw_truncated": raw.truncated,
        "index_chunks_per_s": round(result.chunks_embedded / index_s, 1),
        "raw_chunks_per_s": round(len(texts) / raw_s, 1),
        # Linux: kilobytes.
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _run_child(kind: str, root: Path, data_dir: Path, i: int, args: argparse.Namespace) -> Any:
    cmd = [
        sys.executable,
        "-m",
        "bench.embed_throughput",
        "--child",
        kind,
        "--root",
        str(root),
        "--data-dir",
        str(data_dir),
        "--project",
        f"throughput-{kind}-{i}",  # a fresh project: nothing from the embedding cache
        "--batch",
        str(args.batch),
        "--batch-files",
        str(args.batch_files),
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _derive_int8(data_dir: Path) -> float:
    """The first use of the default model: derive and cache its int8 graph."""
    code = (
        "import asyncio, sys\n"
        "from codebase_mcp_search.adapters.onnx import OnnxEmbedder\n"
        "asyncio.run(OnnxEmbedder(cache_dir=__import__('pathlib').Path(sys.argv[1])).open())\n"
    )
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(data_dir / "models")], check=True)
    return time.perf_counter() - t0


def run(args: argparse.Namespace) -> dict[str, Any]:
    kinds = args.embedders.split(",")
    with tempfile.TemporaryDirectory(prefix="embed-throughput-") as tmp:
        root = Path(tmp) / "repo"
        for src in args.source:
            shutil.copytree(
                src, root / Path(src).name, ignore=shutil.ignore_patterns("__pycache__")
            )
        data_dir = Path(tmp) / "data"
        first_use_s = _derive_int8(data_dir) if "onnx" in kinds else None
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for i in range(args.runs):
            for kind in kinds:
                one = _run_child(kind, root, data_dir, i, args)
                print(json.dumps(one), file=sys.stderr)
                runs[kind].append(one)
    summary: dict[str, Any] = {}
    for kind, rs in runs.items():
        index_rate = statistics.median(r["index_chunks_per_s"] for r in rs)
        raw_rate = statistics.median(r["raw_chunks_per_s"] for r in rs)
        summary[kind] = {
            "model": rs[0]["model"],
            "index_chunks_per_s": round(index_rate, 1),
            "raw_chunks_per_s": round(raw_rate, 1),
            "index_vs_raw": round(index_rate / raw_rate, 3),
            "load_seconds": round(statistics.median(r["load_seconds"] for r in rs), 2),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in rs),
        }
    out: dict[str, Any] = {
        "sources": [Path(s).name for s in args.source],
        "batch_size": args.batch,
        "index_batch_files": args.batch_files,
        "order": [k for _ in range(args.runs) for k in kinds],
        "summary": summary,
        "runs": runs,
    }
    if first_use_s is not None:
        out["onnx_first_use_seconds"] = round(first_use_s, 2)
    if "onnx" in summary and "local" in summary:
        onnx, local = summary["onnx"], summary["local"]
        out["onnx_vs_local"] = {
            "index": round(onnx["index_chunks_per_s"] / local["index_chunks_per_s"], 2),
            "raw": round(onnx["raw_chunks_per_s"] / local["raw_chunks_per_s"], 2),
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", action="append", default=None)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--embedders", default="onnx,local")
    p.add_argument("--batch", type=int, default=32)
    # Several indexing batches, so that chunking and writes overlapping the model is measured
    # (the 49 default files would be one batch of the default 64).
    p.add_argument("--batch-files", type=int, default=8)
    p.add_argument("--out", default=None)
    # One run in a fresh process (used by the parent).
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--root", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--project", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args))))
        return
    args.source = args.source or DEFAULT_SOURCES
    emit(run(args), args.out)


if __name__ == "__main__":
    main()
