"""No process of ours outlives a SIGKILLed ``codebase-mcp worker`` or server (issue 34): killed
while its chunking workers ran, a worker left them and multiprocessing's resource tracker
adopted by init, about 200 MB a set; a killed ``serve --workers 2`` left its server processes
serving the port. The embedded postmaster is shared by every process using its data directory
and outlives them by design: it is not counted."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from codebase_mcp_search.core import defaults
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import unused_port
from tests.integration.test_job_workers import CLI, _start_worker, _until_ready
from tests.processes import Process, descendants, kill, left_after, not_postgres
from tests.walks import write_tiny_files

# Enough changed files that chunking goes to worker processes, with a margin for the batches
# chunked early, in a thread, while the run takes its lock.
FILES = defaults.INDEX_POOL_MIN_FILES + 600
WORKERS = 2


def _family(pid: int) -> dict[Process, str]:
    """The descendants of ``pid``, but the postmaster."""
    return {p: c for p, c in descendants(pid).items() if not_postgres(c)}


def _pool_up(family: dict[Process, str]) -> bool:
    """Whether a chunking pool is up: its spawned workers, and the resource tracker."""
    commands = list(family.values())
    workers = sum("spawn_main" in c for c in commands)
    return workers >= WORKERS and any("resource_tracker" in c for c in commands)


def test_a_pool_s_processes_end_with_their_killed_parent(tmp_path: Path) -> None:
    """The pool alone, in a process that holds it and waits."""
    script = (
        "import os, sys, time\n"
        "from codebase_mcp_search.adapters.workers.pool import _process_pool\n"
        "from tests.unit.indexing_doubles import CHUNKER, TOKENS\n"
        f"pool = _process_pool({WORKERS}, CHUNKER, TOKENS)\n"
        f"assert len({{pool.submit(os.getpid).result() for _ in range(20)}}) >= 1\n"
        "print('up', flush=True)\n"
        "time.sleep(120)\n"
    )
    family: dict[Process, str] = {}
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True
    ) as parent:
        try:
            assert parent.stdout is not None and parent.stdout.readline() == b"up\n"
            family = _family(parent.pid)
            assert _pool_up(family), family
            parent.kill()
            parent.wait(10)
            assert left_after(family, 10) == set(), family
        finally:
            parent.kill()
            kill(family)


async def test_a_killed_worker_leaves_no_process_behind(tmp_path: Path, pg_env: str) -> None:
    root = write_tiny_files(tmp_path / "repo", FILES)
    env = {
        **os.environ,
        "CODEBASE_MCP_EMBEDDER": "none",
        "CODEBASE_MCP_INDEX_WORKERS": str(WORKERS),
    }
    log = tmp_path / "worker.log"
    worker = _start_worker(env, log)
    family: dict[Process, str] = {}
    try:
        await _until_ready(log, worker)
        async with open_codebase(Settings(embedder="none")) as cb:
            job = await cb.start_job(root)
            deadline = time.monotonic() + 60
            while not _pool_up(family := _family(worker.pid)):
                seen = await cb.jobs.status(job.id)  # mid-job: its chunking pool is up
                assert not seen.status.terminal, (seen, family)
                assert time.monotonic() < deadline, (seen, family)
                await asyncio.sleep(0.05)
        worker.kill()
        worker.wait(10)
        assert await asyncio.to_thread(left_after, family, 10) == set(), family
    finally:
        worker.kill()
        worker.wait(10)
        kill(family)


def test_a_killed_server_supervisor_leaves_no_server_process(tmp_path: Path, pg_env: str) -> None:
    port = unused_port()
    command = [CLI, "serve", "--transport", "http", "--port", str(port), "--workers", "2"]
    env = {**os.environ, "CODEBASE_MCP_EMBEDDER": "none"}
    family: dict[Process, str] = {}
    with (
        (tmp_path / "server.log").open("wb") as log,
        subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        ) as supervisor,
    ):
        try:
            deadline = time.monotonic() + 60
            while True:  # until both server processes run, and the port answers
                family = _family(supervisor.pid)
                if sum("spawn_main" in c for c in family.values()) == 2 and _answers(port):
                    break
                assert supervisor.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() < deadline, family
                time.sleep(0.2)
            supervisor.kill()
            supervisor.wait(10)
            assert left_after(family, 10) == set(), (tmp_path / "server.log").read_text()
            assert not _answers(port)
        finally:
            supervisor.kill()
            kill(family)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False
