"""Time to search on the 10,000-file workload, over MCP, as a new user meets it: a server
already started (``codebase-mcp serve --transport http``, a fresh data directory, the embedded
Postgres, nothing configured: the default embedder), then one call indexes the workload.

Measured from the call (``start_indexing_background``, or ``index_repository``, which returns
once search works):
- ``searchable_s``: until every file is found by ``search_code``. A few files are added to the
  workload under random names spread over the scan's order (the first one sorts last of all),
  each defining a function of a unique random name; each is searched for (default mode) until
  it is found, and the last one found ends the wait; ``lexical_done_s``: until the indexing
  (lexical) job is done;
- ``semantic_complete_s``: until every chunk holds its vector (``list_repositories``; for a
  version without the two layers, until its indexing job completed), and the semantic layer's
  chunks/s over it;
- with ``--kill``: the server is SIGKILLed once the semantic layer has stored a share of the
  vectors, and started again at once: the seconds until the semantic job runs again, and how
  many chunks the resumed job embedded beyond those missing at the kill (at most a batch).

``--pythonpath DIR`` runs the server of another checkout (``bench.mcp_load``'s rule), to
measure the previous commit side by side.

    python -m bench.searchable [--tool start_indexing_background|index_repository]
        [--workload ../shared/bench/baseline-10k/baseline_repo.tar.gz] [--probes 5]
        [--kill] [--searchable-only] [--pythonpath DIR] [--embedder auto] [--out bench/results/searchable_10k.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import string
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastmcp import Client

from bench.mcp_load import _cli, _up
from bench.retrieval import emit

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE.parent.parent / "shared" / "bench" / "baseline-10k" / "baseline_repo.tar.gz"
POLL_S = 0.25
TERMINAL = ("completed", "failed", "cancelled")


def _unpack(workload: Path, into: Path, probes: int) -> tuple[Path, list[str]]:
    """The workload under ``into``, with ``probes`` files added: their functions' names."""
    with tarfile.open(workload) as tar:
        tar.extractall(into, filter="data")
    root = next(p for p in into.iterdir() if p.is_dir())
    names = []
    for i in range(probes):
        token = secrets.token_hex(4)
        name = f"zq{token}_marker"
        # Spread over the scan's (path) order, the first probe last of all: a run that writes
        # in that order makes it searchable last.
        first = "zz" if i == 0 else secrets.choice(string.ascii_lowercase)
        folder = root / f"{first}{secrets.token_hex(3)}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{token}.py").write_text(f"def {name}(value):\n    return value + 1\n")
        names.append(name)
    return root, names


def _serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [*_cli(env), "serve", "--transport", "http", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _data(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def _found(client: Client[Any], name: str) -> bool:
    result = await client.call_tool("search_code", {"query": name}, raise_on_error=False)
    if result.is_error:
        return False
    return any(h.get("symbol") == name for h in _data(result)["results"])


async def _repository(client: Client[Any]) -> dict[str, Any] | None:
    listed = _data(await client.call_tool("list_repositories", {}))["repositories"]
    return listed[0] if listed else None


async def _job_of(client: Client[Any], kind: str) -> dict[str, Any] | None:
    jobs = _data(await client.call_tool("list_background_jobs", {}))["jobs"]
    return next((j for j in jobs if j.get("kind", "lexical") == kind), None)


async def _measure(
    args: argparse.Namespace, env: dict[str, str], root: Path, names: list[str]
) -> dict[str, Any]:
    port = int(env["_PORT"])
    log = Path(env["CODEBASE_MCP_DATA_DIR"]) / "server.log"
    server = _serve(env, port, log)
    url = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"tool": args.tool, "probes": len(names)}
    try:
        await _up(url)
        async with Client(f"{url}/mcp", timeout=3600) as client:
            started = time.perf_counter()
            call = asyncio.ensure_future(
                client.call_tool(args.tool, {"repo_path": str(root)}, raise_on_error=False)
            )
            missing = set(names)
            async with Client(f"{url}/mcp", timeout=600) as searcher:
                while missing or "lexical_done_s" not in out:
                    for name in list(missing):
                        if await _found(searcher, name):
                            missing.discard(name)
                            out.setdefault("first_probe_found_s", time.perf_counter() - started)
                    if not missing:
                        out.setdefault("searchable_s", round(time.perf_counter() - started, 2))
                    lexical = await _job_of(searcher, "lexical") or {}
                    if lexical.get("status") in TERMINAL:
                        out.setdefault("lexical_done_s", round(time.perf_counter() - started, 2))
                    await asyncio.sleep(POLL_S)
            if args.tool == "index_repository":
                answered = _data(await call)
                out["index_repository_returned_s"] = round(time.perf_counter() - started, 2)
                kept = ("files_indexed", "chunks_created", "vectors_missing", "status")
                out["index_repository"] = {k: v for k, v in answered.items() if k in kept}
            killed = False
            while not args.searchable_only:
                # A session per look: the server may be killed and started again meanwhile.
                async with Client(f"{url}/mcp", timeout=600) as looker:
                    repo = await _repository(looker)
                    layered = repo is not None and "vector_count" in repo
                    if repo is not None and layered:
                        share = repo["vector_count"] / max(1, repo["chunk_count"])
                        complete = repo["chunk_count"] > 0 and share >= 1.0
                    else:
                        share = 0.0
                        lexical = await _job_of(looker, "lexical") or {}
                        complete = lexical.get("status") == "completed"
                    if complete:
                        break
                    semantic = None
                    if args.kill and layered and not killed and share >= args.kill_at:
                        semantic = await _job_of(looker, "semantic")
                if semantic is not None:
                    out["resume"] = await _kill_and_restart(env, semantic, server, log)
                    server = out["resume"].pop("_server")
                    killed = True
                await asyncio.sleep(1.0)
            async with Client(f"{url}/mcp", timeout=600) as looker:
                repo = await _repository(looker)
            assert repo is not None
            out["chunks"] = repo["chunk_count"]
            out["files"] = repo["file_count"]
            if not args.searchable_only:
                out["semantic_complete_s"] = round(time.perf_counter() - started, 2)
                out["semantic_chunks_per_s"] = round(out["chunks"] / out["semantic_complete_s"], 1)
            if not call.done():
                call.cancel()
    finally:
        stop(server)
    return out


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if the process has not ended within a minute."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


async def _kill_and_restart(
    env: dict[str, str], job: dict[str, Any], server: subprocess.Popen[bytes], log: Path
) -> dict[str, Any]:
    """SIGKILL the server while it builds the vectors (``job``); read what was stored
    (``repos``, a process of its own on the same database); start the server again and follow
    the semantic job until it runs again (its next attempt), then to its end."""
    server.send_signal(signal.SIGKILL)
    server.wait()
    listed = await asyncio.to_thread(
        subprocess.run,
        [*_cli(env), "repos", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    [at_kill] = json.loads(listed.stdout)["repositories"]
    restarted = time.perf_counter()
    port = int(env["_PORT"])
    fresh = _serve(env, port, log)
    url = f"http://127.0.0.1:{port}"
    await _up(url)
    async with Client(f"{url}/mcp", timeout=600) as again:
        while True:
            status = _data(await again.call_tool("get_job_status", {"job_id": job["job_id"]}))
            if status["attempts"] >= 2 or status["status"] in TERMINAL:
                break
            await asyncio.sleep(0.1)
        resumed_s = time.perf_counter() - restarted
        while status["status"] not in TERMINAL:
            await asyncio.sleep(1.0)
            status = _data(await again.call_tool("get_job_status", {"job_id": job["job_id"]}))
    missing = at_kill["chunk_count"] - at_kill["vector_count"]
    return {
        "_server": fresh,
        "vectors_at_kill": at_kill["vector_count"],
        "missing_at_kill": missing,
        "restart_to_running_s": round(resumed_s, 2),
        "job_status": status["status"],
        "attempts": status["attempts"],
        "resumed_run_embedded": status.get("chunks_embedded"),
        "embedded_again": max(0, (status.get("chunks_embedded") or 0) - missing),
    }


@contextlib.contextmanager
def fresh_home(
    prefix: str, embedder: str, pythonpath: str | None
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A temporary folder holding an empty data directory (``data``), and the environment of a
    user with nothing configured but that directory and ``embedder`` (this process's
    ``CODEBASE_MCP_*`` settings and ``DATABASE_URL`` left out); ``pythonpath`` runs another
    checkout. The embedded server is stopped and the folder removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CODEBASE_MCP_") and k not in ("DATABASE_URL", "PYTHONPATH")
        }
        env.update(CODEBASE_MCP_DATA_DIR=str(tmp / "data"), CODEBASE_MCP_EMBEDDER=embedder)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        (tmp / "data").mkdir()
        yield tmp, env
    finally:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        for pgdata in (tmp / "data").rglob("postgresql.conf"):
            stop_embedded(pgdata.parent)
        shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with fresh_home("codebase-mcp-searchable-", args.embedder, args.pythonpath) as (tmp, env):
        root, names = _unpack(args.workload, tmp / "work", args.probes)
        env["_PORT"] = str(args.port)
        result = await _measure(args, env, root, names)
        result["version"] = args.pythonpath or "this checkout"
        return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--tool",
        default="start_indexing_background",
        choices=["start_indexing_background", "index_repository"],
    )
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--probes", type=int, default=5)
    p.add_argument("--embedder", default="auto")
    p.add_argument("--kill", action="store_true")
    p.add_argument(
        "--searchable-only", action="store_true", help="stop once search finds every file"
    )
    p.add_argument("--kill-at", type=float, default=0.3)
    p.add_argument("--port", type=int, default=18765)
    p.add_argument("--pythonpath", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
