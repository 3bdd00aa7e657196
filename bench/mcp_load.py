"""Search under load: many MCP clients over streamable HTTP against one server.

``codebase-mcp serve --transport http`` runs in its own process on an embedded Postgres (in a
temporary directory) with the --embedder, over an index of --repo. Clients speak JSON-RPC
with aiohttp (one session each, initialised before timing; httpx's pool spent more CPU
than the server at 100 connections, so the generator measured itself). First one client alone makes --single searches in a row; then
--clients clients make --searches searches each, all at once. Reported: searches per second
over the whole burst, and p50/p95/max of a call's latency; errors by code; the slowest
/health answer during the burst; and the CPU time the server's processes spent per search
(the server's share, whatever the generator costs on the same cores). Last, the same burst of
calls that input validation refuses (a NUL in the query): what the HTTP/MCP transport costs
per call with no search behind it.

With --profile DIR, py-spy samples the server's processes during the burst and the result
adds the share of the samples each part of the server took (``bench.load_profile``).

With --compare NAME=ROOT,..., each version's code serves in turn, --rounds times, over one
index (built by this install): ROOT is put first on PYTHONPATH, a worktree's ``build/editable``
(the import root an editable install mounts), or ``src`` for code from before the one import
name. The result gives each version's runs and the medians of its figures.

    python -m bench.mcp_load [--clients 100] [--searches 5] [--embedder hash] [--repo PATH]
        [--workers N] [--profile DIR] [--compare NAME=SRC,... [--rounds 3]]
        [--out bench/results/mcp_load.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.job_latency import bench_env, free_port
from bench.load_profile import Profiler
from bench.mcp_latency import _ms
from bench.retrieval import emit
from codebase_mcp_search.adapters.postgres.embedded import start_embedded, stop_embedded

CLI = str(Path(sys.executable).with_name("codebase-mcp"))
QUERIES = Path(__file__).with_name("own_eval_queries.json")
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _payload(response: aiohttp.ClientResponse) -> Any:
    """The JSON-RPC message of a response, sent as JSON or as one SSE event."""
    text = await response.text()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in text.splitlines():
            if line.startswith("data:"):
                return json.loads(line[5:])
        raise RuntimeError(f"no data in the event stream: {text[:200]}")
    return json.loads(text)


class Session:
    """One MCP client session over streamable HTTP."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = dict(HEADERS)
        self.next_id = 0

    async def open(self) -> None:
        async with self.http.post(
            self.url,
            headers=self.headers,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
        ) as r:
            r.raise_for_status()
            await r.read()
            sid = r.headers.get("mcp-session-id")
        if sid:
            self.headers["mcp-session-id"] = sid
        async with self.http.post(
            self.url,
            headers=self.headers,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        ) as r:
            await r.read()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        async with self.http.post(
            self.url,
            headers=self.headers,
            json={
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            },
        ) as r:
            r.raise_for_status()
            result: dict[str, Any] = (await _payload(r))["result"]
        return result


def _code(result: dict[str, Any]) -> str | None:
    if not result.get("isError"):
        return None
    text: str = result["content"][0]["text"]
    return text.split(":", 1)[0]


def _process_cpu(root: int) -> float | None:
    """CPU seconds (user + system) spent so far by process ``root`` and its descendants, from
    /proc; None where there is no /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    parent: dict[int, int] = {}
    spent: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        spent[pid] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid, seconds in spent.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += seconds
    return total


class CpuMeter:
    """CPU milliseconds per call spent by named process trees (the server, Postgres) over a
    stretch of calls."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = roots
        self.before: dict[str, float | None] = {}

    def start(self) -> None:
        self.before = {name: _process_cpu(pid) for name, pid in self.roots.items()}

    def per_call(self, calls: int) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, pid in self.roots.items():
            before, after = self.before.get(name), _process_cpu(pid)
            ok = before is not None and after is not None
            out[f"{name}_cpu_ms_per_call"] = (
                round((after - before) * 1000 / calls, 2) if ok else None  # type: ignore[operator]
            )
        return out


def _stats(samples: list[float]) -> dict[str, float]:
    """``mcp_latency``'s p50/p95 of a call, with the slowest."""
    return {**_ms(samples), "max_ms": round(max(samples) * 1000, 1)}


async def single(url: str, queries: list[str], n: int, cpu: CpuMeter) -> dict[str, Any]:
    """One client's searches in a row: latency, and the CPU a search costs with nothing
    else running (no contention for the cores)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        session = Session(http, url)
        await session.open()
        for q in queries[:5]:  # warm up
            await session.call("search_code", {"query": q})
        samples = []
        cpu.start()
        for i in range(n):
            started = time.perf_counter()
            result = await session.call("search_code", {"query": queries[i % len(queries)]})
            samples.append(time.perf_counter() - started)
            if _code(result) is not None:
                raise RuntimeError(result)
        spent = cpu.per_call(n)
    return {"searches": n, **_stats(samples), **spent}


async def refused(url: str, clients: int, calls: int, cpu: CpuMeter) -> dict[str, Any]:
    """The transport's own cost: ``clients`` x ``calls`` searches that the server's input
    validation refuses (a NUL in the query) before any search runs."""
    connector = aiohttp.TCPConnector(limit=clients + 10)
    async with aiohttp.ClientSession(connector=connector) as http:
        sessions = [Session(http, url) for _ in range(clients)]
        await asyncio.gather(*(s.open() for s in sessions))

        async def client(session: Session) -> None:
            for _ in range(calls):
                result = await session.call("search_code", {"query": "a\x00b"})
                if _code(result) != "VALIDATION_ERROR":
                    raise RuntimeError(result)

        cpu.start()
        began = time.perf_counter()
        await asyncio.gather(*(client(s) for s in sessions))
        wall = time.perf_counter() - began
    n = clients * calls
    return {"calls": n, "calls_per_s": round(n / wall, 1), **cpu.per_call(n)}


async def burst(
    url: str,
    health: str,
    queries: list[str],
    clients: int,
    searches: int,
    cpu: CpuMeter,
    profiler: Profiler | None = None,
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=clients + 10)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as http:
        sessions = [Session(http, url) for _ in range(clients)]
        await asyncio.gather(*(s.open() for s in sessions))
        start = asyncio.Event()
        samples: list[float] = []
        codes: Counter[str] = Counter()
        health_s: list[float] = []

        async def client(k: int, session: Session) -> None:
            await start.wait()
            for i in range(searches):
                query = queries[(k * searches + i) % len(queries)]
                began = time.perf_counter()
                try:
                    result = await session.call("search_code", {"query": query})
                    codes[_code(result) or "ok"] += 1
                except aiohttp.ClientError as e:
                    codes[f"http:{type(e).__name__}"] += 1
                samples.append(time.perf_counter() - began)

        async def probe() -> None:
            await start.wait()
            while not done.is_set():
                began = time.perf_counter()
                async with http.get(health) as r:
                    await r.read()
                health_s.append(time.perf_counter() - began)
                codes[f"health:{r.status}"] += 1
                await asyncio.sleep(0.05)

        done = asyncio.Event()
        tasks = [asyncio.create_task(client(k, s)) for k, s in enumerate(sessions)]
        prober = asyncio.create_task(probe())
        if profiler is not None:
            await asyncio.to_thread(profiler.start)
        cpu.start()
        began = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - began
        spent = cpu.per_call(clients * searches)
        profile = await asyncio.to_thread(profiler.finish) if profiler is not None else None
        done.set()
        await prober
    return {
        "clients": clients,
        "searches_each": searches,
        "wall_s": round(wall, 2),
        "searches_per_s": round(clients * searches / wall, 1),
        **_stats(samples),
        "outcomes": dict(codes),
        "health_max_ms": round(max(health_s) * 1000, 1) if health_s else None,
        **spent,
        **({"server_samples_percent": profile} if profile is not None else {}),
    }


def _index(env: dict[str, str], repo: Path) -> int:
    """Index ``repo`` with the CLI; how many chunks it holds."""
    subprocess.run([CLI, "index", str(repo), "-q"], env=env, check=True)
    listed = subprocess.run(
        [CLI, "repos", "--json"], env=env, check=True, capture_output=True, text=True
    )
    [found] = json.loads(listed.stdout)["repositories"]
    chunks: int = found["chunk_count"]
    return chunks


def _cli(env: dict[str, str]) -> list[str]:
    """The command line of the version first on ``env``'s PYTHONPATH: a root of the layout
    before the one import name (top-level ``entrypoints``) runs its own CLI module; any other
    (a worktree's ``build/editable``, or none) runs ``codebase_mcp_search``'s."""
    first = env.get("PYTHONPATH", "").split(os.pathsep)[0]
    if first and (Path(first) / "entrypoints" / "cli" / "main.py").is_file():
        return [sys.executable, "-m", "entrypoints.cli.main"]
    return [CLI]


def _spawn(env: dict[str, str], port: int, workers: int = 1) -> subprocess.Popen[bytes]:
    several = ["--workers", str(workers)] if workers > 1 else []
    return subprocess.Popen(
        [*_cli(env), "serve", "--transport", "http", "--port", str(port), *several],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _up(base: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        for _ in range(300):
            try:
                if (await http.get(f"{base}/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)


async def _measure(
    args: argparse.Namespace, env: dict[str, str], queries: list[str], postmaster: int
) -> dict[str, Any]:
    """Start a server with ``env``, run the single client, the burst and the refused calls
    against it, stop it."""
    port = free_port()
    server = _spawn(env, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        await _up(base)
        cpu = CpuMeter({"server": server.pid, "postgres": postmaster})
        return {
            "single_client": await single(f"{base}/mcp", queries, args.single, cpu),
            "burst": await burst(
                f"{base}/mcp",
                f"{base}/health",
                queries,
                args.clients,
                args.searches,
                cpu,
                Profiler(server.pid, args.profile) if args.profile else None,
            ),
            "refused_calls": await refused(f"{base}/mcp", args.clients, args.searches, cpu),
        }
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


# The figures a comparison reports the median of, per version: (section, field).
COMPARED = (
    ("single_client", "p50_ms"),
    ("single_client", "server_cpu_ms_per_call"),
    ("single_client", "postgres_cpu_ms_per_call"),
    ("burst", "searches_per_s"),
    ("burst", "p50_ms"),
    ("burst", "p95_ms"),
    ("burst", "server_cpu_ms_per_call"),
    ("burst", "postgres_cpu_ms_per_call"),
    ("burst", "health_max_ms"),
)


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for section, field in COMPARED:
        values = [r[section][field] for r in runs if r[section].get(field) is not None]
        if values:
            out[f"{section}.{field}"] = round(statistics.median(values), 2)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="codebase-mcp-load-"))
    try:
        db = await start_embedded(tmp / "pg")
        env = bench_env(db, tmp, args.embedder, "load")
        chunks = await asyncio.to_thread(_index, env, args.repo)
        spec = json.loads(QUERIES.read_text())
        queries = [q["query"] for q in spec["queries"] if q["corpus"] == "rich"]
        postmaster = int((tmp / "pg" / "postmaster.pid").read_text().split()[0])
        head = {
            "embedder": args.embedder,
            "server_processes": args.workers,
            "repo": str(args.repo),
            "chunks": chunks,
            "cpus": os.cpu_count(),
        }
        if not args.compare:
            return {**head, **await _measure(args, env, queries, postmaster)}
        # Versions alternate round by round on one database and index, so a drift of the
        # machine's speed falls on each alike.
        versions = dict(item.split("=", 1) for item in args.compare.split(","))
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
        for _ in range(args.rounds):
            for name, src in versions.items():
                path = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
                runs[name].append(
                    await _measure(args, {**env, "PYTHONPATH": path}, queries, postmaster)
                )
        return {
            **head,
            "versions": versions,
            "rounds": args.rounds,
            "medians": {name: _medians(r) for name, r in runs.items()},
            "runs": runs,
        }
    finally:
        stop_embedded(tmp / "pg")
        shutil.rmtree(tmp, ignore_errors=True)


def _default_repo() -> Path:
    import rich

    return Path(rich.__file__).parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--searches", type=int, default=5)
    p.add_argument("--single", type=int, default=200)
    p.add_argument("--embedder", default="hash")
    p.add_argument("--workers", type=int, default=1, help="serve --workers")
    p.add_argument("--repo", type=Path, default=_default_repo())
    p.add_argument("--out", type=Path, default=Path("bench/results/mcp_load.json"))
    p.add_argument(
        "--compare",
        default=None,
        help="NAME=ROOT,NAME=ROOT: serve each version's code (ROOT put first on PYTHONPATH: a "
        "worktree's build/editable, or src before the one import name; empty: this install) "
        "in turn, --rounds times, one index",
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="sample the server with py-spy during the burst, raw files in this folder "
        "(bench.load_profile)",
    )
    args = p.parse_args()
    emit(asyncio.run(main_async(args)), args.out)


if __name__ == "__main__":
    main()
