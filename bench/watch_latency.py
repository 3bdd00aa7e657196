"""Always fresh (issue 37): how soon a running server's search sees a change, what a branch
switch costs, and what watching costs while nothing changes. Over MCP, as a user runs it:
``codebase-mcp serve --transport http`` on a fresh data directory (the embedded Postgres),
the hashing embedder, nothing else configured.

Modes:
- ``edits`` (default): a generated repository of ``--files`` modules is indexed with
  ``index_repository``; then, ``--rounds`` times: a new file's function written (seconds
  until ``search_code`` finds it), the function renamed (until found by its new name and no
  longer by the old), the file deleted (until its function is no longer found). Polled every
  50 ms; medians and all samples.
- ``checkout``: the 10,000-file workload made a git repository (``main``), with a branch
  that edits ``--edit`` of its files (a function added to each). A watched server indexes
  ``main``; ``git checkout`` of the branch: the jobs it queued (one expected), seconds from the
  checkout until the job ended and until a function of the last edited file is found. Then,
  watching off, a fresh data directory: ``codebase-mcp index`` of ``main``, the checkout,
  and ``codebase-mcp index`` of the change (whole process, and the run's own duration).
- ``idle``: the server watching the indexed workload for ``--seconds`` with no change: CPU
  seconds of the server process and of the embedded Postgres's processes, as a share of one
  core.

``PYTHONPATH`` is passed on (a worktree's ``build/editable`` runs that tree's server).

    python -m bench.watch_latency [--mode edits|checkout|idle] [--rounds 5] [--files 200]
        [--workload ../shared/bench/baseline-10k/baseline_repo.tar.gz] [--edit 5000]
        [--seconds 60] [--polling] [--out bench/results/watch_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Self

from fastmcp import Client

from bench.job_latency import free_port
from bench.mcp_load import _cli, _up
from bench.retrieval import emit

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE.parent.parent / "shared" / "bench" / "baseline-10k" / "baseline_repo.tar.gz"
POLL_S = 0.05
TERMINAL = ("completed", "failed", "cancelled")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _data(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def _call(client: Client[Any], tool: str, **args: Any) -> Any:
    return _data(await client.call_tool(tool, args))


async def _found(client: Client[Any], name: str) -> bool:
    hits = (await _call(client, "search_code", query=name))["results"]
    return any(name in h["content"] for h in hits)


async def _until(check: Any, timeout_s: float = 600.0) -> float:
    started = time.perf_counter()
    while not await check():
        if time.perf_counter() - started > timeout_s:
            raise TimeoutError
        await asyncio.sleep(POLL_S)
    return round(time.perf_counter() - started, 3)


POLLING = False  # --polling: every server of the run polls (CODEBASE_MCP_WATCH_POLLING)


def _env(data: Path, *, watch: bool = True) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CODEBASE_MCP_") and k != "DATABASE_URL"
    }
    env.update(
        CODEBASE_MCP_DATA_DIR=str(data),
        CODEBASE_MCP_EMBEDDER="hash",
        CODEBASE_MCP_WATCH="true" if watch else "false",
        **GIT_ENV,
    )
    if POLLING:
        env["CODEBASE_MCP_WATCH_POLLING"] = "true"
    return env


class Server:
    """``codebase-mcp serve --transport http`` on a free port, stopped on exit."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        log = Path(self.env["CODEBASE_MCP_DATA_DIR"]) / "server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            return subprocess.Popen(
                [*_cli(self.env), "serve", "--transport", "http", "--port", str(self.port)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    async def __aenter__(self) -> Self:
        self.proc = self._start()
        await _up(self.url)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def _watched(client: Client[Any]) -> None:
    async def ready() -> bool:
        repos = (await _call(client, "list_repositories"))["repositories"]
        return bool(repos) and all(r.get("watching") for r in repos)

    await _until(ready, 120)
    await _until(lambda: _quiet(client), 600)


async def _quiet(client: Client[Any]) -> bool:
    for status in ("pending", "running"):
        if (await _call(client, "list_background_jobs", status=status))["jobs"]:
            return False
    return True


def _module(name: str) -> str:
    return f"def {name}(value):\n    return value * 2 + 1\n"


async def edits(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    root = tmp / "repo"
    for i in range(args.files):
        path = root / "pkg" / f"mod_{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_module(f"load_{i}") + "\n\n" + _module(f"save_{i}"))
    samples: dict[str, list[float]] = {"new_s": [], "rename_s": [], "delete_s": []}
    async with Server(_env(tmp / "data")) as server, Client(f"{server.url}/mcp") as c:
        await _call(c, "index_repository", repo_path=str(root))
        await _watched(c)
        for _ in range(args.rounds):
            old, new = f"fresh{secrets.token_hex(4)}_fn", f"renamed{secrets.token_hex(4)}_fn"
            path = root / "pkg" / f"z_{secrets.token_hex(3)}.py"
            path.write_text(_module(old))
            samples["new_s"].append(await _until(lambda o=old: _found(c, o)))
            path.write_text(_module(new))

            async def renamed(o: str = old, n: str = new) -> bool:
                return await _found(c, n) and not await _found(c, o)

            samples["rename_s"].append(await _until(renamed))
            path.unlink()

            async def deleted(n: str = new) -> bool:
                return not await _found(c, n)

            samples["delete_s"].append(await _until(deleted))
            await _until(lambda: _quiet(c))
    out: dict[str, Any] = {
        "mode": "edits",
        "files": args.files,
        "rounds": args.rounds,
        "polling": POLLING,
    }
    for key, values in samples.items():
        out[f"median_{key}"] = round(statistics.median(values), 3)
        out[f"max_{key}"] = max(values)
        out[key] = values
    return out


def _git(root: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True, env=_env(root))


def _workload_repo(args: argparse.Namespace, tmp: Path) -> tuple[Path, str]:
    """The workload as a git repository on ``main``, with a branch ``edit`` that adds a
    function to ``--edit`` of its files; returns the root and the last edited file's
    function."""
    with tarfile.open(args.workload) as tar:
        tar.extractall(tmp / "work", filter="data")
    root = next(p for p in (tmp / "work").iterdir() if p.is_dir())
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "workload")
    if not args.edit:
        return root, ""
    _git(root, "checkout", "-q", "-b", "edit")
    files = sorted(p for p in root.rglob("*.py") if ".git" not in p.parts)[: args.edit]
    probe = ""
    for i, path in enumerate(files):
        probe = f"edited{i}_{secrets.token_hex(3)}_fn"
        with path.open("a") as f:
            f.write("\n\n" + _module(probe))
    _git(root, "commit", "-q", "-am", "edit")
    _git(root, "checkout", "-q", "main")
    return root, probe


def _index(env: dict[str, str], root: Path) -> subprocess.CompletedProcess[bytes]:
    """``codebase-mcp index ROOT --json``, a whole process."""
    return subprocess.run(
        [*_cli(env), "index", str(root), "--json"], env=env, check=True, capture_output=True
    )


async def checkout(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    root, probe = _workload_repo(args, tmp)
    out: dict[str, Any] = {"mode": "checkout", "edited_files": args.edit}
    async with Server(_env(tmp / "data")) as server, Client(f"{server.url}/mcp", timeout=3600) as c:
        await _call(c, "index_repository", repo_path=str(root))
        await _watched(c)
        before = {j["job_id"] for j in (await _call(c, "list_background_jobs", limit=100))["jobs"]}
        started = time.perf_counter()
        _git(root, "checkout", "-q", "edit")
        out["git_checkout_s"] = round(time.perf_counter() - started, 2)
        out["found_last_edited_s"] = round(
            out["git_checkout_s"] + await _until(lambda: _found(c, probe)), 2
        )
        await _until(lambda: _quiet(c))
        out["all_jobs_done_s"] = round(time.perf_counter() - started, 2)
        jobs = [
            j
            for j in (await _call(c, "list_background_jobs", limit=100))["jobs"]
            if j["job_id"] not in before
        ]
        out["jobs_queued"] = len(jobs)
        out["jobs"] = [
            {k: j.get(k) for k in ("kind", "status", "files_indexed", "started_at", "completed_at")}
            for j in jobs
        ]
    # Watching off, a fresh data directory: the same change indexed by `codebase-mcp index`.
    _git(root, "checkout", "-q", "main")
    env = _env(tmp / "data-off", watch=False)
    await asyncio.to_thread(_index, env, root)
    _git(root, "checkout", "-q", "edit")
    started = time.perf_counter()
    done = await asyncio.to_thread(_index, env, root)
    out["cli_index_of_change_s"] = round(time.perf_counter() - started, 2)
    answer = json.loads(done.stdout)
    out["cli_index_run_s"] = answer.get("duration_seconds")
    out["cli_files_indexed"] = answer.get("files_indexed")
    out["ratio_watch_to_cli"] = round(out["all_jobs_done_s"] / out["cli_index_of_change_s"], 2)
    return out


def _cpu_s(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _postgres_pids(data: Path) -> list[int]:
    """The embedded server's processes: its postmaster (named by postmaster.pid) and the
    postmaster's children."""
    pidfile = next(data.rglob("postmaster.pid"), None)
    if pidfile is None:
        return []
    master = int(pidfile.read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                children.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return [master, *children]


async def idle(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    root, _ = _workload_repo(argparse.Namespace(workload=args.workload, edit=0), tmp)
    data = tmp / "data"
    async with Server(_env(data)) as server, Client(f"{server.url}/mcp", timeout=3600) as c:
        await _call(c, "index_repository", repo_path=str(root))
        await _watched(c)
        repos = (await _call(c, "list_repositories"))["repositories"]
        assert server.proc is not None
        server_pid, pg = server.proc.pid, _postgres_pids(data)
        await asyncio.sleep(5)  # the index's own aftermath settles
        s0, p0, t0 = _cpu_s([server_pid]), _cpu_s(pg), time.perf_counter()
        await asyncio.sleep(args.seconds)
        s1, p1, t1 = _cpu_s([server_pid]), _cpu_s(pg), time.perf_counter()
    wall = t1 - t0
    return {
        "mode": "idle",
        "files": repos[0]["file_count"],
        "watching": repos[0].get("watching"),
        "seconds": round(wall, 1),
        "server_cpu_percent_of_a_core": round(100 * (s1 - s0) / wall, 2),
        "postgres_cpu_percent_of_a_core": round(100 * (p1 - p0) / wall, 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="watch-bench-"))
    try:
        mode = {"edits": edits, "checkout": checkout, "idle": idle}[args.mode]
        return await mode(args, tmp)
    finally:
        _clean(tmp)


def _clean(tmp: Path) -> None:
    from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

    for pgdata in tmp.rglob("postgresql.conf"):
        stop_embedded(pgdata.parent)
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mode", default="edits", choices=["edits", "checkout", "idle"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--files", type=int, default=200)
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--edit", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--polling", action="store_true", help="watch by polling, not events")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    global POLLING
    POLLING = args.polling
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
