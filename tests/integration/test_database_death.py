"""The embedded Postgres killed (SIGKILL of its postmaster) under a ``codebase-mcp worker`` at
several points of a job: during the lexical run, as the semantic job starts, and along the
vector backfill, once with a backend busy in a long statement. Each time the worker brings the
database back by itself (nothing else could: this test uses it over plain connections, which
never start it), the job shows ``blocked``, then runs again and completes; a caller following
the job sees it complete (or gets a clear error), and the repository ends with the chunk ids
and vectors of an uninterrupted run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres import PgDatabase, PgJobQueue
from codebase_mcp_search.adapters.postgres.schema import GLOBAL_SCHEMA, schema_name
from codebase_mcp_search.core.errors import StoreUnavailable
from codebase_mcp_search.core.models import IndexResult
from codebase_mcp_search.core.services import JobService
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.requests import index_request
from codebase_mcp_search.entrypoints.settings import Settings
from tests.conftest import drop_projects_async, new_project_id
from tests.embedding_servers import OLLAMA_MODEL, embedding_server
from tests.integration.test_embedded_recovery import (
    CLI,
    alive,
    embedded_env,
    postmaster_pid,
    stop_postmaster,
)
from tests.integration.test_mcp_jobs import write_repo

FILES = 150
"""Two chunks each: a lexical run long enough to be killed in, and a backfill of many batches."""
BATCH = 6
BACK_S = 60.0
"""How long after the database answers again a blocked job may take to run, or to complete."""


class Jobs:
    """The queue's rows, read over connections of the test's own (never through pgserver,
    which would start the killed server again itself)."""

    def __init__(self, data: Path) -> None:
        self.url = f"postgresql://postgres:@/postgres?host={data / 'postgres'}"

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record] | None:
        """The rows, or None while the server does not answer."""
        try:
            conn = await asyncpg.connect(self.url, timeout=5)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            return None
        try:
            return list(await conn.fetch(sql, *args, timeout=10))
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            return None
        finally:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    async def of(self, project: str) -> list[dict[str, Any]] | None:
        rows = await self.fetch(
            f"SELECT id::text AS id, kind, status, attempts, error_type, error_message "
            f"FROM {GLOBAL_SCHEMA}.jobs WHERE project_id = $1 ORDER BY created_at",
            project,
        )
        return None if rows is None else [dict(r) for r in rows]

    async def vectors(self, project: str) -> int | None:
        rows = await self.fetch(f"SELECT count(embedding) AS n FROM {schema_name(project)}.chunks")
        return None if not rows else int(rows[0]["n"])


async def _hold_first_write(data: Path, jobs: Jobs, project: str) -> asyncpg.Connection:
    """Create ``project``'s schema on the embedded server (as the CLI would) and hold its
    document statistics row locked in an open transaction: a lexical run then stops at its
    first write."""
    settings = Settings(database_url=None, data_dir=data, embedder="none")
    async with open_codebase(settings, project_id=project) as codebase:
        await codebase.repositories()  # the schema is made on the store's first use
    conn = await asyncpg.connect(jobs.url)
    await conn.execute("BEGIN")
    await conn.execute(f"SELECT FROM {schema_name(project)}.corpus_stats FOR UPDATE")
    return conn


def _tail(log: Path) -> str:
    return log.read_text()[-3000:]


def _spawn_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [CLI, "worker"], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _queue(env: dict[str, str], root: Path) -> str:
    """The id of the lexical job ``index --background`` queues for ``root``."""
    queued = subprocess.run(
        [CLI, "index", str(root), "--background", "--json"],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    job_id: str = json.loads(queued.stdout)["job_id"]
    return job_id


@pytest.fixture
def data() -> Iterator[Path]:
    """The data directory, outside pytest's base temporary directory: pgserver, run as root,
    opens the directory's parents to its own user when it first starts the server, and a
    pytest session starting meanwhile (the machine's other tests) closes that base directory
    again, so the restarts this test is about would fail for want of access."""
    path = Path(tempfile.mkdtemp(prefix="codebase-mcp-db-death-"))
    yield path / "data"
    stop_postmaster(path / "data")
    shutil.rmtree(path, ignore_errors=True)


async def _kill_and_recover(
    data: Path, jobs: Jobs, project: str, job_id: str, log: Path, *, busy: bool = False
) -> dict[str, Any]:
    """SIGKILL the postmaster; the job then reads ``blocked``, and ``BACK_S`` after the server
    answers again it runs (or has completed). Returns its last reading. ``busy``: a backend
    is in the middle of a long statement (as an index build would be) when it dies: it runs
    on without its postmaster, and a new server cannot start while it does."""
    pid = postmaster_pid(data)
    assert pid is not None and alive(pid)
    if busy:
        long = await asyncpg.connect(jobs.url)
        statement = asyncio.create_task(
            long.fetchval("SELECT count(*) FROM generate_series(1, 10000000000)")
        )
        await asyncio.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    try:
        return await _recover(data, jobs, job_id, log, pid, killed, project)
    finally:
        if busy:
            statement.cancel()
            long.terminate()
            with contextlib.suppress(BaseException):
                await statement


async def _recover(
    data: Path, jobs: Jobs, job_id: str, log: Path, pid: int, killed: float, project: str
) -> dict[str, Any]:
    back: float | None = None
    seen: list[str] = []
    while True:
        rows = await jobs.of(project)
        now = time.monotonic()
        if rows is None:
            assert back is None or now - back < BACK_S, f"the server went away again: {seen}"
            assert now - killed < BACK_S, "the worker did not start the database again\n" + _tail(
                log
            )
        else:
            back = back if back is not None else now
            job = next(j for j in rows if j["id"] == job_id)
            if not seen or seen[-1] != job["status"]:
                seen.append(job["status"])
            if "blocked" in seen and job["status"] in ("running", "completed"):
                break
            assert job["status"] in ("running", "blocked"), (job, seen)
            assert now - back < BACK_S, f"job {job_id} stalled: {seen}, {job}\n" + _tail(log)
        await asyncio.sleep(0.05)
    new_pid = postmaster_pid(data)
    assert new_pid is not None and new_pid != pid and alive(new_pid)
    return job


async def test_a_job_outlives_its_database_killed_at_any_point(
    tmp_path: Path, data: Path, pg_env: str, pg_url: str
) -> None:
    project = pg_env
    root = write_repo(tmp_path / "repo", FILES)
    log = tmp_path / "worker.log"
    jobs = Jobs(data)
    with embedding_server(delay_s=0.1) as server:
        ollama = {
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": server.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
            "CODEBASE_MCP_EMBEDDING_BATCH_SIZE": "3",
            "CODEBASE_MCP_EMBEDDING_CONCURRENCY": "1",
            "CODEBASE_MCP_VECTOR_BATCH_CHUNKS": str(BATCH),
        }
        env = {**embedded_env(data), **ollama}
        worker = _spawn_worker(env, log)
        hold: asyncpg.Connection | None = None
        try:
            deadline = time.monotonic() + 90
            while b"running up to" not in log.read_bytes():
                assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
                await asyncio.sleep(0.1)
            # The run's first write waits on this lock (every write moves the project's
            # document statistics), so the kill below lands inside the lexical run however
            # fast it would otherwise be: killed after its last write, the run is done and
            # only the worker's record of it is retried, never blocked.
            hold = await _hold_first_write(data, jobs, project)
            lexical_id = _queue(env, root)
            # A caller that joined the job (index_repository's way) follows it through.
            follower_db = PgDatabase(jobs.url, data_dir=tmp_path / "follower")
            follower = asyncio.create_task(
                JobService(PgJobQueue(follower_db, os.environ["CODEBASE_MCP_JOB_QUEUE"])).run(
                    project, index_request(root)
                )
            )

            # 1. During the lexical run.
            deadline = time.monotonic() + 60
            while True:
                rows = await jobs.of(project)
                assert rows is not None
                if rows[0]["status"] != "pending":
                    break
                assert time.monotonic() < deadline, rows
                await asyncio.sleep(0.02)
            assert rows[0]["status"] == "running", rows
            await _kill_and_recover(data, jobs, project, lexical_id, log)
            hold.terminate()  # its backend died with the server
            try:
                followed = await asyncio.wait_for(follower, BACK_S)
            except StoreUnavailable as e:  # a clear error is the other acceptable end
                assert e.code == "DATABASE_ERROR" and "retry" in e.message, e
            else:
                assert isinstance(followed, IndexResult)
                assert followed.files_indexed + followed.files_unchanged == FILES
            finally:
                await follower_db.close()

            # 2. As the semantic job starts; 3-5. along its backfill, a batch or more apart.
            deadline = time.monotonic() + BACK_S
            while True:
                rows = await jobs.of(project)
                assert rows is not None
                semantic = [j for j in rows if j["kind"] == "semantic"]
                if semantic and semantic[0]["status"] == "running":
                    break
                assert rows[0]["status"] != "failed", rows
                assert time.monotonic() < deadline, rows
                await asyncio.sleep(0.02)
            semantic_id = semantic[0]["id"]
            assert rows[0]["status"] == "completed", rows
            await _kill_and_recover(data, jobs, project, semantic_id, log)
            for busy in (True, False, False):
                stored = await jobs.vectors(project)
                assert stored is not None
                deadline = time.monotonic() + BACK_S
                while True:
                    now_stored = await jobs.vectors(project)
                    assert now_stored is not None
                    if now_stored >= stored + BATCH:
                        break
                    assert time.monotonic() < deadline, (stored, now_stored)
                    await asyncio.sleep(0.02)
                job = await _kill_and_recover(data, jobs, project, semantic_id, log, busy=busy)
                assert job["status"] == "running", "killed too late: the backfill had ended"

            deadline = time.monotonic() + BACK_S
            while True:
                rows = await jobs.of(project)
                assert rows is not None
                job = next(j for j in rows if j["id"] == semantic_id)
                if job["status"] == "completed":
                    break
                assert job["status"] in ("running", "blocked"), job
                assert time.monotonic() < deadline, job
                await asyncio.sleep(0.1)
            assert [j["status"] for j in rows] == ["completed", "completed"], rows
            got = await jobs.fetch(
                f"SELECT id, embedding::text AS v FROM {schema_name(project)}.chunks"
            )
            assert got is not None
        finally:
            if hold is not None and not hold.is_closed():
                hold.terminate()
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(30)
                except subprocess.TimeoutExpired:
                    worker.kill()
            stop_postmaster(data)

    # What an uninterrupted run stores (on the session's server, in a project of its own; the
    # same vectors from a server that does not make it wait).
    other = new_project_id()
    with embedding_server() as server:
        settings = Settings(
            database_url=pg_url,
            embedder="ollama",
            ollama_base_url=server.url,
            ollama_embedding_model=OLLAMA_MODEL,
        )
        try:
            async with open_codebase(settings, project_id=other) as fresh:
                result = await fresh.index(root)
                assert result.vectors_missing == 0
                conn = await asyncpg.connect(pg_url)
                try:
                    expected = await conn.fetch(
                        f"SELECT id, embedding::text AS v FROM {fresh.database_name}.chunks"
                    )
                finally:
                    await conn.close()
        finally:
            await drop_projects_async(pg_url, [other])

    def vectors(rows: list[asyncpg.Record]) -> dict[str, np.ndarray]:
        assert all(r["v"] is not None for r in rows)
        return {r["id"]: np.array([float(x) for x in r["v"].strip("[]").split(",")]) for r in rows}

    want, have = vectors(expected), vectors(got)
    assert len(want) == 2 * FILES
    assert sorted(have) == sorted(want)
    for cid, vector in want.items():
        cosine = float(vector @ have[cid] / (np.linalg.norm(vector) * np.linalg.norm(have[cid])))
        assert cosine >= 0.9999, cid
