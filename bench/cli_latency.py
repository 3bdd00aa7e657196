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

    python -m bench.cli_latency [--rounds 7] [--embedder onnx] [--out bench/results/x.json]
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


def _env(data: Path, embedder: str, idle: float | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
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


def _runs(args: list[str], env: dict[str, str], rounds: int) -> dict[str, Any]:
    samples = [_timed(args, env) for _ in range(rounds)]
    return {
        **_summary([wall for wall, _ in samples]),
        "cpu_median_s": round(statistics.median(cpu for _, cpu in samples), 3),
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


async def _first_call(data: Path, repo: Path, embedder: str, idle: float | None) -> list[float]:
    """Seconds from spawn to initialized, then of the first start_indexing_background."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    env = _env(data, embedder, idle)
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
    p.add_argument("--out")
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cb-cli-latency-"))
    repo = scratch / "repo"
    shutil.copytree(SRC, repo, ignore=shutil.ignore_patterns("__pycache__"))
    data = scratch / "data"
    results: dict[str, Any] = {"rounds": args.rounds, "embedder": args.embedder}
    try:
        cycle = _env(data, args.embedder, 0)
        warm = _env(data, args.embedder, args.idle)
        _timed(["index", str(repo), "-q"], cycle)
        results["help"] = _runs(["--help"], cycle, args.rounds)
        for mode in ("lexical", "hybrid"):
            query = ["search", "fuse the two rankings", "--mode", mode, "--json"]
            results[f"search_{mode}_idle0"] = _runs(query, cycle, args.rounds)
            _timed(query, warm)  # starts the server, which then stays up
            results[f"search_{mode}_warm"] = _runs(query, warm, args.rounds)
            _stop(data)
        init, call = [], []
        for i in range(args.rounds):
            fresh = scratch / f"fresh-{i}"
            try:
                a, b = asyncio.run(_first_call(fresh, repo, args.embedder, 0))
            finally:
                _stop(fresh)
            init.append(a)
            call.append(b)
        results["serve_initialize"] = _summary(init)
        results["serve_first_start_indexing_background"] = _summary(call)
    finally:
        _stop(data)
        shutil.rmtree(scratch, ignore_errors=True)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
