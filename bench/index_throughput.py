"""Indexing throughput on a generated repository of Python files (hashing embedder, 384-d).

Generates N files of 50-100 lines (deterministic), then measures with the library facade:
a cold index (each run in a fresh data directory: with ``--store postgres`` that includes
starting the embedded PostgreSQL and building the ANN indexes searches use; each run, and the
re-index runs, start with the page cache written back (the generated files stay cached) and
the previous run's data directory deleted), an unchanged
re-index (medians of --runs runs) and a re-index after editing 1% of the files. Peak memory is
the client's max RSS and, for Postgres, the largest sampled RSS sum of the server's processes.
``phases`` gives, for the last cold index, when each phase of the progress reports was first
and last reported (seconds from the start; the phases overlap, as the pipeline interleaves
them batch by batch), and ``open`` when ``open_codebase`` returned (on a fresh data directory
that includes creating and starting the embedded server).

    python -m bench.index_throughput [--store postgres] [--files 10000] [--runs 3] [--out x.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.retrieval import emit
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings, cli_index_workers

WORDS = [
    "user",
    "account",
    "order",
    "invoice",
    "payment",
    "cache",
    "session",
    "token",
    "request",
    "response",
    "config",
    "parser",
    "buffer",
    "stream",
    "record",
    "batch",
    "queue",
    "worker",
    "task",
    "event",
    "handler",
    "client",
    "server",
    "router",
    "filter",
    "metric",
    "report",
    "schema",
    "table",
    "index",
    "query",
    "result",
    "error",
    "retry",
    "timeout",
    "limit",
    "window",
]
VERBS = [
    "load",
    "save",
    "parse",
    "build",
    "render",
    "fetch",
    "update",
    "delete",
    "compute",
    "validate",
    "merge",
    "split",
]


def _function(rng: random.Random, n_lines: int) -> list[str]:
    name = f"{rng.choice(VERBS)}_{rng.choice(WORDS)}_{rng.choice(WORDS)}"
    args = ", ".join(rng.sample(WORDS, rng.randint(1, 3)))
    doc = f"{rng.choice(VERBS).capitalize()} the {rng.choice(WORDS)} for each {rng.choice(WORDS)}."
    lines = [f"def {name}({args}):", f'    """{doc}"""']
    for _ in range(max(1, n_lines - 3)):
        a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(VERBS)
        lines.append(f"    {a}_{b} = {c}_{rng.choice(WORDS)}({a}, {rng.randint(0, 999)})")
    lines.append(f"    return {rng.choice(WORDS)}")
    return lines


def _module(rng: random.Random) -> str:
    target = rng.randint(50, 100)
    lines = ["import os", "import json", ""]
    while len(lines) < target - 6:
        lines += ["", *_function(rng, min(rng.randint(6, 20), target - len(lines) - 2))]
    return "\n".join(lines[:target]) + "\n"


def generate(root: Path, n_files: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    total = 0
    for i in range(n_files):
        path = root / f"pkg{i // 100:03d}" / f"mod{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _module(rng)
        total += len(text)
        path.write_text(text)
    return total


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        root = Path(tmp) / "repo"
        t = time.perf_counter()
        size = generate(root, args.files)
        gen_s = time.perf_counter() - t

        def settings(run: int) -> Settings:
            data = Path(tmp) / f"data{run}"
            return Settings(
                store=args.store,
                embedder="hash",
                data_dir=data,
                database_url=None,
                index_workers=cli_index_workers(),  # as the CLI does
            )

        sampler = _ServerMemory() if args.store == "postgres" else None
        full = []
        for run in range(args.runs - 1):  # fresh stores: each run is a first index
            _settle()
            t = time.perf_counter()
            async with open_codebase(settings(run)) as cb:
                await cb.index(root)
                full.append(time.perf_counter() - t)
            _stop_embedded(Path(tmp) / f"data{run}")
            # Gone before the next run: the kernel would otherwise write this run's half a
            # gigabyte of dirty pages back during it (after 30 s), which no first index meets.
            shutil.rmtree(Path(tmp) / f"data{run}", ignore_errors=True)  # none: memory store
        _settle()
        t = time.perf_counter()
        clock = _PhaseClock(t)
        async with open_codebase(settings(args.runs)) as cb:
            clock.mark("open")
            first = await cb.index(root, progress=clock)
            full.append(time.perf_counter() - t)
            full_s = statistics.median(full)
            _settle()
            unchanged = []
            for _ in range(args.runs):
                t = time.perf_counter()
                again = await cb.index(root)
                unchanged.append(time.perf_counter() - t)
                assert again.files_indexed == 0 and again.chunks_embedded == 0
            rng = random.Random(11)
            edited = rng.sample(sorted(root.rglob("*.py")), max(1, args.files // 100))
            for p in edited:
                p.write_text(p.read_text() + "\n\ndef added_helper():\n    return 42\n")
            t = time.perf_counter()
            edit = await cb.index(root)
            edit_s = time.perf_counter() - t
        _stop_embedded(Path(tmp) / f"data{args.runs}")
    server_rss, server_pss = sampler.stop() if sampler is not None else (None, None)
    return {
        "store": args.store,
        "files": args.files,
        "bytes": size,
        "generate_seconds": round(gen_s, 2),
        "full_index_seconds_median": round(full_s, 2),
        "full_index_seconds_all": [round(x, 2) for x in full],
        "files_per_second": round(args.files / full_s, 1),
        "chunks": first.chunks_created,
        "chunks_per_second": round(first.chunks_created / full_s, 1),
        "unchanged_reindex_seconds_median": round(statistics.median(unchanged), 3),
        "unchanged_reindex_seconds_all": [round(x, 3) for x in unchanged],
        "edited_files": edit.files_indexed,
        "edited_chunks_embedded": edit.chunks_embedded,
        "edit_reindex_seconds": round(edit_s, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "server_peak_rss_mib": server_rss,
        "server_peak_pss_mib": server_pss,
        "phases": clock.spans(),
    }


class _PhaseClock:
    """A progress callback noting when each phase was first and last reported."""

    def __init__(self, start: float) -> None:
        self._start = start
        self._spans: dict[str, list[float]] = {}

    def mark(self, phase: str) -> None:
        now = round(time.perf_counter() - self._start, 3)
        span = self._spans.setdefault(phase, [now, now])
        span[1] = now

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.mark(phase)

    def spans(self) -> dict[str, list[float]]:
        return {phase: list(span) for phase, span in self._spans.items()}


def _settle() -> None:
    """Every run starts with nothing left to write back (the generated files, say)."""
    os.sync()
    time.sleep(1)


def _stop_embedded(data_dir: Path) -> None:
    from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

    if (data_dir / "postgres").exists():
        stop_embedded(data_dir / "postgres")


class _ServerMemory:
    """Samples the memory of every ``postgres`` process: the peaks of the summed RSS (shared
    buffers counted once per process that touched them), every 0.2 s, and of the summed PSS
    (shared pages split among the processes that map them: the server's real footprint), every
    second (reading it walks each process's page tables), MiB."""

    def __init__(self) -> None:
        self._peak = (0.0, 0.0)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        tick = 0
        while not self._done.wait(0.2):
            tick += 1
            full = tick % 5 == 0
            rss = pss = 0
            for p in psutil.process_iter(["name"]):
                if p.info["name"] != "postgres":
                    continue
                try:
                    mem = p.memory_full_info() if full else p.memory_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                rss += mem.rss
                pss += mem.pss if full else 0
            self._peak = (max(self._peak[0], rss / 2**20), max(self._peak[1], pss / 2**20))

    def stop(self) -> tuple[float, float]:
        self._done.set()
        self._thread.join()
        return round(self._peak[0], 1), round(self._peak[1], 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--store", choices=["memory", "postgres"], default="postgres")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
