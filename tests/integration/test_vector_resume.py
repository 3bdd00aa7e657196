"""The semantic layer survives a SIGKILL: a ``codebase-mcp worker`` (and, apart, a ``serve``
process with its own job worker) killed while it builds a repository's vectors, then started
again, resumes the job by itself, embeds again at most the batch that was in flight, and ends
with the chunk ids and vectors an uninterrupted run stores."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import asyncpg
import httpx
import numpy as np
import pytest

from codebase_mcp_search.core.models import Job, JobKind, JobStatus
from codebase_mcp_search.entrypoints.codebase import Codebase
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.conftest import drop_projects_async, new_project_id
from tests.embedding_servers import (
    EMBEDDING_PATHS,
    OLLAMA_MODEL,
    EmbeddingServer,
    embedding_server,
    unused_port,
)
from tests.integration.test_mcp_jobs import write_repo

CLI = str(Path(sys.executable).with_name("codebase-mcp"))
BATCH = 6
"""Chunks per batch of the semantic layer: the most a kill may cost."""
FILES = 30
"""Two chunks each."""


def _embedded(server: EmbeddingServer) -> int:
    """Chunk texts the embedding server was asked for so far (not the query each process
    sends on opening its embedder, to learn the model's dimension)."""
    return sum(
        len(r.inputs)
        for r in server.requests
        if r.path in EMBEDDING_PATHS and not any("dimension probe" in t for t in r.inputs)
    )


def _start(kind: str, env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    args = [CLI, "worker"]
    if kind == "server":
        args = [CLI, "serve", "--transport", "http", "--port", str(port)]
    with log.open("ab") as out:
        return subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


async def _until(check: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


async def _ready(kind: str, proc: subprocess.Popen[bytes], log: Path, port: int) -> None:
    def up() -> bool:
        assert proc.poll() is None, log.read_text()
        if kind == "worker":
            return b"running up to" in log.read_bytes()
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    await _until(up, f"the {kind} did not start")


async def _semantic_job(cb: Codebase) -> Job | None:
    """The project's semantic job, the newest."""
    for job in (await cb.jobs.active(cb.project_id)) + (
        await cb.jobs.queue.list(project_id=cb.project_id, limit=20)
    ).jobs:
        if job.kind is JobKind.SEMANTIC:
            return job
    return None


async def _vectors(url: str, cb: Codebase, repository_id: str) -> dict[str, np.ndarray]:
    """Every stored vector of the repository, by chunk id (read from its project's schema)."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            f"SELECT id, embedding::text AS v FROM {cb.database_name}.chunks WHERE repo_id = $1",
            repository_id,
        )
    finally:
        await conn.close()
    return {
        r["id"]: np.array([float(x) for x in r["v"].strip("[]").split(",")])
        for r in rows
        if r["v"] is not None
    }


@pytest.mark.parametrize("kind", ["worker", "server"])
async def test_a_process_killed_while_building_vectors_resumes_them(
    kind: str, tmp_path: Path, pg_env: str, pg_url: str
) -> None:
    root = write_repo(tmp_path / "repo", FILES)
    port = unused_port()
    log = tmp_path / f"{kind}.log"
    with embedding_server(delay_s=0.05) as server:
        env = {
            **os.environ,
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": server.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
            "CODEBASE_MCP_EMBEDDING_BATCH_SIZE": "3",
            "CODEBASE_MCP_EMBEDDING_CONCURRENCY": "1",
            "CODEBASE_MCP_VECTOR_BATCH_CHUNKS": str(BATCH),
        }
        proc = _start(kind, env, log, port)
        try:
            await _ready(kind, proc, log, port)
            async with open_codebase(Settings(embedder="none")) as cb:
                await cb.start_job(root)
                deadline = time.monotonic() + 60
                while True:  # until the semantic job runs and has stored a batch or two
                    repo = await cb.repository_for_path(root)
                    semantic = await _semantic_job(cb)
                    if repo is not None and semantic is not None and repo.vector_count >= BATCH:
                        break
                    assert time.monotonic() < deadline, (repo, semantic)
                    await asyncio.sleep(0.02)
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
                killed = await cb.repository(repo.id)
                assert 0 < killed.vector_count < killed.chunk_count == 2 * FILES
                asked_before = _embedded(server)

                proc = _start(kind, env, log, port)
                restarted = time.monotonic()
                while True:  # the job runs again, by itself
                    job = await cb.jobs.status(semantic.id)
                    if job.attempts >= 2 or job.status.terminal:
                        break
                    assert time.monotonic() - restarted < 60, job
                    await asyncio.sleep(0.05)
                resumed_s = time.monotonic() - restarted
                while not job.status.terminal:
                    assert time.monotonic() - restarted < 60, job
                    await asyncio.sleep(0.1)
                    job = await cb.jobs.status(semantic.id)
                assert job.status is JobStatus.COMPLETED, job
                done = await cb.repository(repo.id)
                assert done.vectors_missing == 0 and done.vector_count == done.chunk_count
                # The vectors stored before the kill were kept: only the rest, and at most
                # the batch in flight again, went to the model.
                assert asked_before - killed.vector_count <= BATCH
                assert _embedded(server) <= done.chunk_count + BATCH
                got = await _vectors(pg_url, cb, repo.id)
                ids = sorted(c.id for c in await cb.chunks(repo.id))
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        # The restarted process took it up at its first look (its start included).
        assert resumed_s < 10, log.read_text()

        uninterrupted = Settings(
            embedder="ollama", ollama_base_url=server.url, ollama_embedding_model=OLLAMA_MODEL
        )
        other = new_project_id()
        try:
            async with open_codebase(uninterrupted, project_id=other) as fresh:
                result = await fresh.index(root)
                assert result.vectors_missing == 0
                expected = await _vectors(pg_url, fresh, result.repository_id)
                assert sorted(c.id for c in await fresh.chunks(result.repository_id)) == ids
        finally:
            await drop_projects_async(pg_url, [other])
    assert sorted(got) == sorted(expected) == ids
    for cid, vector in expected.items():
        cosine = float(vector @ got[cid] / (np.linalg.norm(vector) * np.linalg.norm(got[cid])))
        assert cosine >= 0.9999, cid
