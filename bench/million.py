"""Search latency and the server process's memory at a given number of chunks (1,000,000 by
default), in embedded Postgres, with the hashing embedder (384-d).

Generates a repository of Python files (deterministic: ten functions per file, one chunk each,
about 29 words a chunk drawn from a 5,000-word Zipf vocabulary: the commonest term is in
nearly every chunk, the tenth in a quarter of them, the rarest in 0.06%; queries draw their
words alike, so most hit a term of hundreds of thousands of postings at 1M chunks), indexes it
through ``Codebase.index`` (lexical and semantic layers, ANN segments) in a child process,
then searches it in a fresh child process: the process a server would be, with nothing of the
indexing in its memory. That process times ``SearchService.search`` end to end (SQL, fusion,
ranking, context lines; query vectors computed before the clock starts) for --queries
questions per mode, --repeat passes (the in-process caches emptied before each pass, as every
pass asks the same questions), and reports p50/p95 per mode with its CPU time per search,
its own resident memory (``VmRSS`` after the searches, and its peak ``VmHWM``), the bytes its
caches account (when the code has a cache budget) and the summed RSS of the Postgres
processes (shared buffers counted once per process: an upper bound, for information).

The budget comes from the environment as for a server (``CODEBASE_MCP_CACHE_BUDGET_MB``;
--budget-mb sets it for the search process). ``--keep DIR`` keeps the repository and the
index for the next run (another budget, or another checkout's code: run the bench with
``PYTHONPATH`` pointing at that checkout's ``build/editable``).

    python -m bench.million [--chunks 1000000] [--keep DIR] [--budget-mb N] [--directory D]
        [--out x.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.retrieval import emit

FUNCTIONS_PER_FILE = 10
VOCABULARY = 5_000
_SYLLABLES = [
    "ka", "lo", "mi", "ne", "po", "ru", "sa", "te", "vi", "zo",
    "bar", "cen", "dor", "fil", "gan", "hol", "jin", "kor", "lum", "mar",
]  # fmt: skip


def vocabulary(n: int = VOCABULARY) -> list[str]:
    """``n`` distinct words of two or three syllables, most frequent first."""
    s = _SYLLABLES
    words = [a + b for a in s for b in s if a != b]
    words += [a + b + c for a in s for b in s for c in s if len({a, b, c}) == 3]
    return words[:n]


class _Words:
    """Words drawn with Zipf frequencies (rank r drawn in proportion to 1 / r)."""

    def __init__(self, rng: random.Random) -> None:
        self.words = vocabulary()
        self._rng = rng
        self._cum = [0.0]
        for r in range(1, len(self.words) + 1):
            self._cum.append(self._cum[-1] + 1.0 / r)

    def __call__(self, k: int = 1) -> list[str]:
        return self._rng.choices(self.words, cum_weights=self._cum[1:], k=k)


def _function(words: _Words, rng: random.Random) -> list[str]:
    a, b, c, d, e, f = words(6)
    lines = [f"def {a}_{b}_{c}({d}, {e}):", f'    """{a.capitalize()} the {b} of each {f}."""']
    for _ in range(rng.randint(3, 8)):
        x, y, z, w = words(4)
        lines.append(f"    {x}_{y} = {z}({w}, {rng.randint(0, 999)})")
    lines.append(f"    return {words()[0]}")
    return lines


def generate(root: Path, chunks: int, seed: int = 11) -> int:
    """Files under ``root`` holding about ``chunks`` chunks; the number of files."""
    rng = random.Random(seed)
    words = _Words(rng)
    n_files = max(1, math.ceil(chunks / FUNCTIONS_PER_FILE))
    for i in range(n_files):
        lines: list[str] = []
        for _ in range(FUNCTIONS_PER_FILE):
            lines += [*_function(words, rng), "", ""]
        path = root / f"pkg{i // 200:04d}" / f"mod{i:06d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))
    return n_files


def queries(n: int, seed: int = 5) -> list[str]:
    """Identifier and word queries over the vocabulary (common and rare words alike)."""
    rng = random.Random(seed)
    words = _Words(rng)
    out: list[str] = []
    for i in range(n):
        a, b, c = words(3)
        out.append(f"{a}_{b}_{c}" if i % 2 == 0 else f"how to {a} the {b} of each {c}")
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 2)


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _postgres_rss_mib() -> float | None:
    try:
        import psutil
    except ImportError:
        return None
    total = 0
    for p in psutil.process_iter(["name", "memory_info"]):
        if p.info["name"] == "postgres" and p.info["memory_info"] is not None:
            total += p.info["memory_info"].rss
    return round(total / 2**20, 1)


def _settings(keep: Path) -> Any:
    from codebase_mcp_search.entrypoints.settings import Settings, cli_index_workers

    return Settings(
        embedder="hash",
        data_dir=keep / "data",
        database_url=None,
        index_workers=cli_index_workers(),
    )


async def index(keep: Path) -> dict[str, Any]:
    """Index ``keep/repo`` into ``keep/data`` (the child process of the index phase)."""
    from bench.harness import open_bench

    async with open_bench(_settings(keep)) as bench:
        t = time.perf_counter()
        result = await bench.codebase.index(keep / "repo")
        seconds = time.perf_counter() - t
        repos = await bench.codebase.repositories()
    return {
        "index_seconds": round(seconds, 1),
        "chunks": sum(r.chunk_count for r in repos),
        "index_status": result.status.value,
        "index_peak_rss_mib": round(_status_kib("VmHWM") / 1024, 1),
    }


async def search(
    keep: Path, n_queries: int, repeat: int, directories: list[str] | None = None
) -> dict[str, Any]:
    """Time every mode over the index (the child process of the search phase), then each mode
    filtered to each of ``directories`` (``<mode>/directory=<d>``)."""
    from bench.harness import open_bench
    from bench.search_latency import _Precomputed
    from codebase_mcp_search.adapters.hashing import HashingEmbedder
    from codebase_mcp_search.core.models import SearchQuery

    qs = queries(n_queries)
    out: dict[str, Any] = {"rss_start_mib": round(_status_kib("VmRSS") / 1024, 1)}
    async with open_bench(_settings(keep)) as bench:
        service = await bench.search_service(
            embedder=await _Precomputed.of(HashingEmbedder(384), qs)
        )
        for q in qs[:5]:  # the pool's connections and the statements' plans
            await service.search(SearchQuery.build(q))
        cells: list[tuple[str, str | None]] = [(m, None) for m in ("lexical", "semantic", "hybrid")]
        cells += [(m, d) for d in directories or [] for m in ("lexical", "semantic", "hybrid")]
        for mode, directory in cells:
            samples: list[float] = []
            cpu = time.process_time()
            for _ in range(repeat):
                drop_caches = getattr(bench.store, "drop_caches", None)
                if drop_caches is not None:
                    drop_caches()
                for q in qs:
                    query = SearchQuery.build(q, mode=mode, limit=10, directory=directory)
                    t = time.perf_counter()
                    await service.search(query)
                    samples.append((time.perf_counter() - t) * 1000.0)
            out[mode if directory is None else f"{mode}/directory={directory}"] = {
                "p50_ms": _pct(samples, 0.5),
                "p95_ms": _pct(samples, 0.95),
                "mean_ms": round(statistics.fmean(samples), 2),
                # This process's CPU per search (threads included): less bent by other work
                # on the machine than the wall clock.
                "cpu_ms": round((time.process_time() - cpu) * 1000.0 / len(samples), 2),
                "n": len(samples),
            }
        # Every pass's caches filled again, then what the process holds.
        for mode in ("lexical", "semantic", "hybrid"):
            for q in qs:
                await service.search(SearchQuery.build(q, mode=mode, limit=10))
        database = bench.workspaces.services.stores.database
        ledger = getattr(database, "cache_ledger", None)
        if ledger is not None:
            out["cache_budget_mib"] = round(ledger.budget / 2**20, 1)
            out["cache_accounted_mib"] = round(ledger.used / 2**20, 1)
        out["rss_mib"] = round(_status_kib("VmRSS") / 1024, 1)
        out["peak_rss_mib"] = round(_status_kib("VmHWM") / 1024, 1)
        out["postgres_rss_sum_mib"] = _postgres_rss_mib()
    return out


def _child(phase: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Run ``phase`` in a fresh interpreter; its JSON result."""
    cmd = [
        sys.executable,
        "-m",
        "bench.million",
        "--phase",
        phase,
        "--keep",
        str(args.keep),
        "--queries",
        str(args.queries),
        "--repeat",
        str(args.repeat),
        *[a for d in args.directory or [] for a in ("--directory", d)],
    ]
    done = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    keep: Path = args.keep
    out: dict[str, Any] = {"target_chunks": args.chunks}
    repo = keep / "repo"
    if not repo.exists():
        t = time.perf_counter()
        out["files"] = generate(repo, args.chunks)
        out["generate_seconds"] = round(time.perf_counter() - t, 1)
    env = dict(os.environ)
    marker = keep / "indexed.json"
    if not marker.exists():
        marker.write_text(json.dumps(_child("index", args, env)))
    out.update(json.loads(marker.read_text()))
    if args.budget_mb is not None:
        env["CODEBASE_MCP_CACHE_BUDGET_MB"] = str(args.budget_mb)
    out["budget_env_mb"] = env.get("CODEBASE_MCP_CACHE_BUDGET_MB")
    out.update(_child("search", args, env))
    if not args.keep_server:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        stop_embedded(keep / "data" / "postgres")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument("--keep", default=None, help="keep repository and index in this folder")
    p.add_argument("--budget-mb", type=int, default=None, help="the search process's budget")
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--keep-server", action="store_true", help="leave Postgres running")
    p.add_argument(
        "--directory", action="append", help="also time each mode filtered to it, repeatable"
    )
    p.add_argument("--phase", choices=["index", "search"], default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.phase is not None:
        keep = Path(args.keep)
        work = (
            index(keep)
            if args.phase == "index"
            else search(keep, args.queries, args.repeat, args.directory)
        )
        print(json.dumps(asyncio.run(work)))
        return
    with tempfile.TemporaryDirectory(prefix="million-") as scratch:
        args.keep = Path(args.keep or scratch).resolve()
        args.keep.mkdir(parents=True, exist_ok=True)
        emit(run(args), args.out)


if __name__ == "__main__":
    main()
