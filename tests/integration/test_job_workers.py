"""Two ``codebase-mcp worker`` processes on one Postgres: one is SIGKILLed mid-job (the
lexical layer being written), the other takes the job over once its lease expires and
finishes it with exactly the chunks a fresh index produces (test_vector_resume.py kills one
while it builds the vectors)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from codebase_mcp_search.core.models import JobStatus
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import OLLAMA_MODEL, embedding_server
from tests.integration.test_mcp_jobs import write_repo

CLI = str(Path(sys.executable).with_name("codebase-mcp"))
FILES = 600


def _chunk_keys(chunks: list) -> list[tuple[str, int, int, str]]:  # type: ignore[type-arg]
    return sorted((c.file_path, c.start_line, c.end_line, c.content_hash) for c in chunks)


def _start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [CLI, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
        )


async def _until_ready(log: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while b"running up to" not in (text := await asyncio.to_thread(log.read_bytes)):
        assert proc.poll() is None, text
        assert time.monotonic() < deadline, text
        await asyncio.sleep(0.1)


async def test_a_job_of_a_killed_worker_is_finished_by_another(tmp_path: Path, pg_env: str) -> None:
    # Files written two at a time: the lexical run lasts seconds, so the kill lands inside it.
    root = write_repo(tmp_path / "repo", FILES)
    with embedding_server(delay_s=0.1) as server:
        env = {
            **os.environ,
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": server.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
            "CODEBASE_MCP_EMBEDDING_BATCH_SIZE": "2",
            "CODEBASE_MCP_EMBEDDING_CONCURRENCY": "1",
            "CODEBASE_MCP_INDEX_BATCH_FILES": "2",
            "CODEBASE_MCP_JOB_LEASE_SECONDS": "3",
        }
        workers = {
            name: _start_worker(env, tmp_path / f"{name}.log") for name in ("first", "second")
        }
        try:
            for name, proc in workers.items():
                await _until_ready(tmp_path / f"{name}.log", proc)
            async with open_codebase(Settings(embedder="none")) as cb:
                job = await cb.start_job(root)
                deadline = time.monotonic() + 60
                while True:  # until a worker holds it and has written some files
                    seen = await cb.jobs.status(job.id)
                    if seen.status is JobStatus.RUNNING and seen.files_indexed > 0:
                        break
                    assert not seen.status.terminal, seen
                    assert time.monotonic() < deadline, seen
                    await asyncio.sleep(0.05)
                assert seen.worker_id is not None
                holder_pid = int(seen.worker_id.split(":")[1])
                [holder] = [n for n, p in workers.items() if p.pid == holder_pid]
                workers[holder].send_signal(signal.SIGKILL)
                workers[holder].wait(10)
                killed_at = time.monotonic()

                while True:
                    seen = await cb.jobs.status(job.id)
                    if seen.status.terminal:
                        break
                    assert time.monotonic() - killed_at < 60, seen
                    await asyncio.sleep(0.1)
                assert seen.status is JobStatus.COMPLETED, seen
                assert seen.attempts == 2 and seen.worker_id is not None
                assert int(seen.worker_id.split(":")[1]) != holder_pid
                assert seen.result is not None and seen.result.status.value == "success"
                repo = await cb.repository_for_path(root)
                assert repo is not None and repo.file_count == FILES
                resumed = _chunk_keys(await cb.chunks(repo.id))
        finally:
            for proc in workers.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in workers.values():
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
    async with open_codebase(Settings(store="memory", embedder="none")) as fresh:
        result = await fresh.index(root)
        expected = _chunk_keys(await fresh.chunks(result.repository_id))
    assert resumed == expected  # none lost, none duplicated
    survivor = next(p for p in workers.values() if p.returncode != -signal.SIGKILL)
    assert survivor.returncode == 0  # SIGTERM stops a worker cleanly
