"""Background job latencies, on the embedded Postgres (pgserver, in a temporary directory).

- start_indexing_background: response time through fastmcp's in-memory client (the full MCP
  path), for a small repository and for a large directory (it answers before any scan);
- get_job_status and list_background_jobs: p50/p95 over --calls calls, with --jobs finished
  jobs in the table;
- cancel latency: a first index of --repo with the --embedder (a project of its own per run)
  is cancelled once it has written files; the time until get_job_status says ``cancelled``
  (median of --runs);
- resume after SIGKILL: ``codebase-mcp serve --transport http`` runs a first index, is
  SIGKILLed once it has written files, and is started again at once: the time from the
  restart until the job runs again, and until it completes (median of --runs).

    python -m bench.job_latency [--embedder onnx] [--repo PATH] [--large PATH] [--jobs 1000]
        [--calls 300] [--runs 3] [--out bench/results/job_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastmcp import Client

from bench.mcp_latency import _ms, _timed
from bench.retrieval import emit
from codebase_mcp_search.adapters.postgres.embedded import start_embedded, stop_embedded
from codebase_mcp_search.core.models import Job, JobOutcome, JobStatus, new_job_id, utcnow
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings

CLI = str(Path(sys.executable).with_name("codebase-mcp"))


def _default_repo() -> Path:
    import rich

    return Path(rich.__file__).parent


async def _seed_finished(settings: Settings, n: int) -> None:
    """``n`` finished jobs in the queue (as a week of use would leave)."""
    async with open_workspaces(settings) as ws:
        queue = ws.jobs.queue
        for i in range(n):
            job = await queue.submit(
                Job(
                    id=new_job_id(),
                    project_id="bench-old",
                    repo_path=f"/old/repo{i}",
                    repo_name=f"repo{i}",
                    created_at=utcnow() - timedelta(hours=1),
                )
            )
            await queue.claim("seed", 60)
            await queue.finish(job.id, "seed", JobOutcome(status=JobStatus.COMPLETED))


async def _until(client: Client[Any], job_id: str, wanted: set[str], written: bool = False) -> Any:
    while True:
        status = (await client.call_tool("get_job_status", {"job_id": job_id})).structured_content
        assert status is not None
        if status["status"] in wanted and (not written or status["files_indexed"] > 0):
            return status
        if status["status"] in ("failed", "completed") and status["status"] not in wanted:
            raise RuntimeError(f"job ended before it could be measured: {status}")
        await asyncio.sleep(0.02)


async def tool_latencies(settings: Settings, repo: Path, large: Path, calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    quiet = settings.model_copy(update={"job_worker": False})  # jobs stay pending: pure API
    async with Client(build_server(quiet)) as client:
        for name, root in (("small", repo), ("large", large)):
            samples = []
            for _ in range(max(5, calls // 10)):
                started = time.perf_counter()
                got = await client.call_tool("start_indexing_background", {"repo_path": str(root)})
                samples.append(time.perf_counter() - started)
                assert got.structured_content is not None
                await client.call_tool("cancel_job", {"job_id": got.structured_content["job_id"]})
            out[f"start_indexing_background_{name}"] = _ms(samples)
        listed = await client.call_tool("list_background_jobs", {"project_id": "bench-old"})
        assert listed.structured_content is not None
        ids = [j["job_id"] for j in listed.structured_content["jobs"]]
        out["get_job_status"] = await _timed(
            calls, lambda i: client.call_tool("get_job_status", {"job_id": ids[i % len(ids)]})
        )
        out["list_background_jobs"] = await _timed(
            calls, lambda i: client.call_tool("list_background_jobs", {"project_id": "bench-old"})
        )
        out["list_background_jobs_page_50"] = await _timed(
            calls,
            lambda i: client.call_tool(
                "list_background_jobs", {"project_id": "bench-old", "limit": 50, "offset": 100}
            ),
        )
    return out


async def cancel_latency(settings: Settings, repo: Path, runs: int) -> dict[str, Any]:
    samples = []
    async with Client(build_server(settings)) as client:
        for i in range(runs):
            # A project of its own: a first index, with every vector to compute.
            got = await client.call_tool(
                "start_indexing_background",
                {"repo_path": str(repo), "project_id": f"bench-cancel-{i}"},
            )
            assert got.structured_content is not None
            job_id = got.structured_content["job_id"]
            await _until(client, job_id, {"running"}, written=True)
            asked = time.perf_counter()
            await client.call_tool("cancel_job", {"job_id": job_id})
            await _until(client, job_id, {"cancelled"})
            samples.append(time.perf_counter() - asked)
    return {"cancel_to_cancelled_s": _seconds(samples)}


def _seconds(samples: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(samples), 3),
        "max_s": round(max(samples), 3),
        "runs": [round(s, 3) for s in samples],
    }


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a server to listen on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [CLI, "serve", "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def resume_latency(settings: Settings, env: dict[str, str], repo: Path, runs: int) -> Any:
    to_running, to_done = [], []
    async with open_workspaces(settings) as ws:
        for i in range(runs):
            cb = await ws.codebase(f"bench-resume-{i}")  # a first index: every vector to compute
            port = free_port()
            server = _serve(env, port)
            try:
                job = await cb.start_job(repo)
                while True:  # until the server's worker has written some files
                    seen = await cb.jobs.status(job.id)
                    if seen.status is JobStatus.RUNNING and seen.files_indexed > 0:
                        break
                    if seen.status.terminal:
                        raise RuntimeError(f"job ended before the kill: {seen}")
                    await asyncio.sleep(0.02)
                server.send_signal(signal.SIGKILL)
                server.wait()
                restarted = time.perf_counter()
                server = _serve(env, port)
                while True:
                    seen = await cb.jobs.status(job.id)
                    if seen.attempts >= 2 and seen.status is JobStatus.RUNNING:
                        to_running.append(time.perf_counter() - restarted)
                        break
                    if seen.status.terminal:
                        raise RuntimeError(f"job ended without resuming: {seen}")
                    await asyncio.sleep(0.02)
                while True:
                    seen = await cb.jobs.status(job.id)
                    if seen.status.terminal:
                        break
                    await asyncio.sleep(0.05)
                if seen.status is not JobStatus.COMPLETED:
                    raise RuntimeError(f"resumed job did not complete: {seen}")
                to_done.append(time.perf_counter() - restarted)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(30)
    return {
        "restart_to_running_s": _seconds(to_running),
        "restart_to_completed_s": _seconds(to_done),
    }


def bench_env(database_url: str, tmp: Path, embedder: str, project: str) -> dict[str, str]:
    """This process's environment for a bench's servers and CLIs: its own database, data
    directory (under ``tmp``), embedder and project."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "CODEBASE_MCP_DATA_DIR": str(tmp / "data"),
        "CODEBASE_MCP_EMBEDDER": embedder,
        "CODEBASE_MCP_PROJECT": project,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="codebase-mcp-jobs-"))
    try:
        url = await start_embedded(tmp / "pg")
        env = bench_env(url, tmp, args.embedder, "bench")
        os.environ.update(env)
        settings = Settings()
        await _seed_finished(settings, args.jobs)
        results: dict[str, Any] = {
            "embedder": args.embedder,
            "repo": str(args.repo),
            "large": str(args.large),
            "finished_jobs_in_table": args.jobs,
            "lease_seconds": settings.job_lease_seconds,
        }
        results.update(await tool_latencies(settings, args.repo, args.large, args.calls))
        results.update(await cancel_latency(settings, args.repo, args.runs))
        results["resume_after_sigkill"] = await resume_latency(settings, env, args.repo, args.runs)
        return results
    finally:
        stop_embedded(tmp / "pg")
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="onnx")
    p.add_argument("--repo", type=Path, default=_default_repo())
    p.add_argument("--large", type=Path, default=Path(sys.prefix))
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("bench/results/job_latency.json"))
    args = p.parse_args()
    emit(asyncio.run(main_async(args)), args.out)


if __name__ == "__main__":
    main()
