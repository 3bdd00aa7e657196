"""Retrieval quality on the CoSQA dev split (500 web queries over 6,267 Python functions).

The corpus is written out as a repository of modules, ten functions per file, indexed with the
project's own pipeline (filesystem scan, tree-sitter chunking, the configured store and
embedder), and each query is run through the library facade. A query is answered at rank r
when the r-th hit lies in the gold function's file, overlaps its lines, and is at most 20 lines
longer than it (so a merged bundle or a whole class does not count for one small function).

    python -m bench.cosqa_eval [--embedder none|hash|onnx|local] [--modes lexical,semantic,hybrid]
                               [--data ../shared/bench/cosqa] [--out bench/results/cosqa.json]
                               [--variants JSON] [--context path|path_symbol] [--max-tokens N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import context_text
from bench.harness import open_bench
from bench.retrieval import emit, metrics, rank_of, ranked_search, ranking_variants
from codebase_mcp_search.entrypoints.settings import Settings

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "cosqa"
PER_FILE = 10


@dataclass(frozen=True)
class Gold:
    path: str
    start: int
    end: int


def _normalise(code: str) -> str:
    """The dataset strips the first line's indentation only; re-indent the body to 4 spaces."""
    lines = code.replace("\r\n", "\n").split("\n")
    rest = [ln for ln in lines[1:] if ln.strip()]
    if rest:
        indent = min(len(ln) - len(ln.lstrip(" ")) for ln in rest)
        if indent > 4:
            cut = indent - 4
            lines = [lines[0]] + [ln[cut:] if ln[:cut].strip() == "" else ln for ln in lines[1:]]
    return "\n".join(ln.rstrip() for ln in lines).strip("\n")


def write_corpus(data: Path, root: Path) -> tuple[list[tuple[str, Gold]], int]:
    code_to_idx: dict[str, int] = json.loads((data / "code_idx_map.txt").read_text())
    by_idx = {i: code for code, i in code_to_idx.items()}
    gold: dict[int, Gold] = {}
    ordered = sorted(by_idx)
    for file_no in range(0, len(ordered), PER_FILE):
        rel = f"corpus/m{file_no // PER_FILE:04d}.py"
        parts: list[str] = []
        line = 1
        for idx in ordered[file_no : file_no + PER_FILE]:
            code = _normalise(by_idx[idx])
            n = code.count("\n") + 1
            gold[idx] = Gold(rel, line, line + n - 1)
            parts.append(code)
            line += n + 2  # two blank lines between functions
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n\n".join(parts) + "\n")
    queries = json.loads((data / "cosqa-retrieval-dev-500.json").read_text())
    return [(q["doc"], gold[q["retrieval_idx"]]) for q in queries], len(by_idx)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cosqa-") as tmp:
        root = Path(tmp) / "cosqa"
        queries, n_functions = write_corpus(Path(args.data), root)
        settings = Settings(store="memory", embedder=args.embedder, onnx_max_tokens=args.max_tokens)
        async with open_bench(settings) as bench:
            cb = bench.codebase
            t0 = time.perf_counter()
            indexed = await cb.index(root)
            index_s = time.perf_counter() - t0
            (repo,) = await cb.repositories()
            out: dict[str, Any] = {
                "embedder": args.embedder,
                "model": repo.embedding_model,
                "onnx_max_tokens": args.max_tokens,
                "chunks_truncated": indexed.chunks_truncated,
                "functions": n_functions,
                "queries": len(queries),
                "files": indexed.files_indexed,
                "chunks": indexed.chunks_created,
                "index_seconds": round(index_s, 2),
                "modes": {},
            }
            variants = ranking_variants(args.variants)
            for mode in args.modes.split(","):
                for variant, ranking in variants.items():
                    ranks: list[int | None] = []
                    latencies: list[float] = []
                    for text, g in queries:
                        t = time.perf_counter()
                        result = await ranked_search(bench, ranking, text, mode)
                        latencies.append((time.perf_counter() - t) * 1000)
                        ranks.append(rank_of(result.hits, g.path, g.start, g.end))
                    key = mode if variant == "default" else f"{mode}/{variant}"
                    out["modes"][key] = {
                        **metrics(ranks),
                        "latency_ms_p50": round(statistics.median(latencies), 2),
                    }
    if args.context:
        out["context"] = args.context
        out["context_embedding"] = context_text.summary()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    # onnx: the default model (all-MiniLM-L6-v2, int8 graph); local: the same model on torch.
    p.add_argument("--embedder", default="none", choices=["none", "hash", "onnx", "local"])
    p.add_argument("--modes", default="lexical")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--variants", default=None, help="ranking variants, JSON {name: {field: value}}")
    p.add_argument(
        "--max-tokens", type=int, default=None, help="the ONNX model's token budget per chunk"
    )
    p.add_argument(
        "--context",
        default=None,
        choices=sorted(context_text.VARIANTS),
        help="embed a header (path, or path and symbol) before each chunk's text",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args()
    context_text.install(args.context)
    if not (Path(args.data) / "code_idx_map.txt").exists():
        sys.exit(f"CoSQA data not found in {args.data} (expected ../shared/bench/cosqa)")
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
