"""First use (issue 35): the CLI and the MCP server as whole processes, as a user runs them.

Times, each a whole ``python -m codebase_mcp_search.entrypoints.cli.main`` process:

- ``--help``;
- ``search`` (lexical, then hybrid) over a small indexed repository (a copy of
  ``src/codebase_core/ranking``), with ``CODEBASE_MCP_PG_IDLE_SECONDS=0`` (every command
  starts and stops the embedded server) and with the server left up between commands
  (``--idle``, default 300 s: the first search starts it, the others find it running);
- the MCP server on stdio, on a fresh data directory each round: from spawn to the end of
  the client's ``initialize``, then the first ``start_indexing_background`` call.

Prints medians with min and max (the machine is shared: report the spread), and writes the
samples with ``--out``. Every embedded server it started is stopped at the end.

``--baseline TREE`` runs each command also from another checkout (``TREE/build/editable``,
where an editable install maps the package, and ``TREE`` on ``PYTHONPATH``), alternating this
tree's run and the baseline's round by round on one data directory: what the machine's load
does to one, it does to the other. Each figure then has its ``baseline`` and the medians of the
pairs' ratios (this / baseline), of wall and of CPU time.

    python -m bench.cli_latency [--rounds 7] [--embedder onnx] [--baseline TREE] [--out x.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src" / "codebase_core" / "ranking"
CLI = [sys.executable, "-m", "codebase_mcp_search.entrypoints.cli.main"]


def _env(data: Path, embedder: str, idle: float | None, tree: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'build' / 'editable'}{os.pathsep}{tree}"
    env.pop("CODEBASE_MCP_DATABASE_URL", None)
    env["CODEBASE_MCP_DATA_DIR"] = str(data)
    env["CODEBASE_MCP_EMBEDDER"] = embedder
    if idle is not None:
        env["CODEBASE_MCP_PG_IDLE_SECONDS"] = str(idle)
    return env


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of the command, and the CPU seconds (user + system) of the process: the
    latter hardly depends on what else the machine runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return took, cpu


def _runs(
    args: list[str], env: dict[str, str], rounds: int, baseline: dict[str, str] | None = None
) -> dict[str, Any]:
    """``rounds`` runs of the command; with ``baseline`` (its environment), each round runs
    this tree's then the baseline's, and the pairs' ratios are summarised too."""
    samples, before = [], []
    for _ in range(rounds):
        samples.append(_timed(args, env))
        if baseline is not None:
            before.append(_timed(args, baseline))
    result = _with_cpu(samples)
    if baseline is not None:
        result["baseline"] = _with_cpu(before)
        result["ratio_wall_median"] = round(
            statistics.median(a[0] / b[0] for a, b in zip(samples, before, strict=True)), 3
        )
        result["ratio_cpu_median"] = round(
            statistics.median(a[1] / b[1] for a, b in zip(samples, before, strict=True)), 3
        )
    return result


def _with_cpu(samples: list[tuple[float, float]]) -> dict[str, Any]:
    return {
        **_summary([wall for wall, _ in samples]),
        "cpu_median_s": round(statistics.median(cpu for _, cpu in samples), 3),
        "cpu_samples_s": [round(cpu, 3) for _, cpu in samples],
    }


def _summary(samples: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(samples), 3),
        "min_s": round(min(samples), 3),
        "max_s": round(max(samples), 3),
        "samples_s": [round(s, 3) for s in samples],
    }


def _stop(data: Path) -> None:
    pgdata = data / "postgres"
    if (pgdata / "postmaster.pid").exists():
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        stop_embedded(pgdata)


async def _first_call(
    data: Path, repo: Path, embedder: str, idle: float | None, tree: Path | None = None
) -> list[float]:
    """Seconds from spawn to initialized, then of the first start_indexing_background."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    env = _env(data, embedder, idle, tree)
    transport = StdioTransport(CLI[0], [*CLI[1:], "serve"], env=env)
    start = time.perf_counter()
    async with Client(transport) as client:
        initialized = time.perf_counter()
        await client.call_tool("start_indexing_background", {"repo_path": str(repo)})
        called = time.perf_counter()
    return [initialized - start, called - initialized]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--embedder", default="onnx")
    p.add_argument("--idle", type=float, default=300.0, help="idle seconds of the warm runs")
    p.add_argument("--baseline", type=Path, help="another checkout, run in turn with this one")
    p.add_argument("--out")
    args = p.parse_args()
    base: Path | None = args.baseline.resolve() if args.baseline else None
    scratch = Path(tempfile.mkdtemp(prefix="cb-cli-latency-"))
    repo = scratch / "repo"
    shutil.copytree(SRC, repo, ignore=shutil.ignore_patterns("__pycache__"))
    data = scratch / "data"
    results: dict[str, Any] = {"rounds": args.rounds, "embedder": args.embedder}
    if base is not None:
        results["baseline"] = str(base)
    try:
        cycle = _env(data, args.embedder, 0)
        warm = _env(data, args.embedder, args.idle)
        cycle_b = _env(data, args.embedder, 0, base) if base else None
        warm_b = _env(data, args.embedder, args.idle, base) if base else None
        _timed(["index", str(repo), "-q"], cycle)
        results["help"] = _runs(["--help"], cycle, args.rounds, cycle_b)
        for mode in ("lexical", "hybrid"):
            query = ["search", "fuse the two rankings", "--mode", mode, "--json"]
            results[f"search_{mode}_idle0"] = _runs(query, cycle, args.rounds, cycle_b)
            _timed(query, warm)  # starts the server, which then stays up
            if warm_b is not None:
                _timed(query, warm_b)  # byte code compiled, as for this tree
            results[f"search_{mode}_warm"] = _runs(query, warm, args.rounds, warm_b)
            _stop(data)
        trees = [("", None), *([("baseline_", base)] if base else [])]
        init: dict[str, list[float]] = {name: [] for name, _ in trees}
        call: dict[str, list[float]] = {name: [] for name, _ in trees}
        for i in range(args.rounds):  # with a baseline: this tree, then it, round by round
            for name, tree in trees:
                fresh = scratch / f"fresh-{name}{i}"
                try:
                    a, b = asyncio.run(_first_call(fresh, repo, args.embedder, 0, tree))
                finally:
                    _stop(fresh)
                init[name].append(a)
                call[name].append(b)
        for name, _ in trees:
            results[f"{name}serve_initialize"] = _summary(init[name])
            results[f"{name}serve_first_start_indexing_background"] = _summary(call[name])
    finally:
        _stop(data)
        shutil.rmtree(scratch, ignore_errors=True)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
