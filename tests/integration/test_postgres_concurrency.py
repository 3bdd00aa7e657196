"""Postgres under concurrency: startup by several pools and processes at once, writers of one
repository side by side (and of one file in turn), the indexing lock across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import asyncpg
import pytest

from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase, PgTaskRepo
from codebase_mcp_search.core.errors import (
    RepositoryBusy,
)
from codebase_mcp_search.core.models import IndexRequest
from tests.conftest import drop_projects, drop_projects_async, new_project_id
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import FILES, indexing_service


async def test_concurrent_startup_in_one_process(pg_url: str, tmp_path: Path) -> None:
    project = new_project_id()
    dbs = [PgDatabase(pg_url, data_dir=tmp_path) for _ in range(4)]
    try:
        names = await asyncio.gather(*(d.workspace(project) for d in dbs))
        assert len({n.schema for n in names}) == 1
    finally:
        for d in dbs:
            await d.close()
        await drop_projects_async(pg_url, [project])


def test_concurrent_startup_across_processes(pg_url: str, tmp_path: Path) -> None:
    """Three processes create the extension, global schema and one project at once."""
    project = new_project_id()
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from codebase_mcp_search.adapters.postgres import PgDatabase, PgTaskRepo
        from codebase_mcp_search.core.models import Task, utcnow

        async def main() -> None:
            db = PgDatabase({pg_url!r}, data_dir=Path({str(tmp_path)!r}))
            try:
                now = utcnow()
                await PgTaskRepo(db, {project!r}).add(
                    Task(id=sys.argv[1], title="t", created_at=now, updated_at=now))
            finally:
                await db.close()

        asyncio.run(main())
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, f"task-{i}"], stderr=subprocess.PIPE)
        for i in range(3)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    try:
        assert [p.returncode for p in procs] == [0, 0, 0], errors

        async def count() -> int:
            db = PgDatabase(pg_url, data_dir=tmp_path)
            try:
                page = await PgTaskRepo(db, project).list()
                return page.total_count
            finally:
                await db.close()

        assert asyncio.run(count()) == 3
    finally:
        drop_projects(pg_url, [project])


async def test_writers_of_other_files_overlap_and_of_one_file_take_turns(
    db: PgDatabase, project: str, pg_url: str
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    ws = await store.workspace()
    blocker, watcher = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        # Hold the repository's row against updates: every write stops at its count update,
        # the last step of its transaction, after its deletes and COPYs.
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(f"SELECT 1 FROM {ws.quoted}.repositories FOR NO KEY UPDATE")
        writes = [
            asyncio.create_task(
                store.replace_files("r1", [file_batch("r1", f"{name}.py", [f"def {name}(): ..."])])
            )
            for name in ("a", "b")
        ]
        waiting = 0
        for _ in range(100):
            waiting = await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%SET file_count%'"
            )
            if waiting == 2:
                break
            await asyncio.sleep(0.05)
        assert waiting == 2, "writes of two different files did not run side by side"
        await tx.rollback()
        await asyncio.wait_for(asyncio.gather(*writes), 10)
    finally:
        await blocker.close()
        await watcher.close()
    # Four writers of one file at once: they take turns, and one version is left.
    versions = [[f"def v{i}(): ...", f"def w{i}(): ..."] for i in range(4)]
    await asyncio.gather(
        *(store.replace_files("r1", [file_batch("r1", "a.py", v)]) for v in versions)
    )
    chunks = [c.content for c in await store.chunks("r1") if c.file_path == "a.py"]
    assert chunks in versions
    (stored,) = await store.list_repositories()
    assert (stored.file_count, stored.chunk_count) == (2, 3)
    n_docs = await _fetch_int(pg_url, f"SELECT n_docs FROM {ws.quoted}.corpus_stats")
    assert n_docs == 3


async def _fetch_int(pg_url: str, sql: str) -> int:
    conn = await asyncpg.connect(pg_url)
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


async def test_indexing_lock_serialises_one_repository(pg_url: str, tmp_path: Path) -> None:
    project = new_project_id()
    db1, db2 = PgDatabase(pg_url, data_dir=tmp_path), PgDatabase(pg_url, data_dir=tmp_path)
    try:
        s1, s2 = PgChunkStore(db1, project), PgChunkStore(db2, project)
        async with s1.indexing_lock("r1", wait=False):
            with pytest.raises(RepositoryBusy) as err:
                async with s2.indexing_lock("r1", wait=False):
                    pass
            assert err.value.code == "REPOSITORY_BUSY"
            async with s2.indexing_lock("other", wait=False):
                pass  # other repositories are not blocked
            waiter = asyncio.create_task(_hold(s2, "r1"))
            await asyncio.sleep(0.3)
            assert not waiter.done()
        await asyncio.wait_for(waiter, 10)
    finally:
        await db1.close()
        await db2.close()
        await drop_projects_async(pg_url, [project])


async def _hold(store: PgChunkStore, repo_id: str) -> None:
    async with store.indexing_lock(repo_id, wait=True):
        pass


async def test_service_waits_for_another_indexer(pg_url: str, tmp_path: Path) -> None:
    from codebase_mcp_search.core.models import repository_id_for

    project = new_project_id()
    db1, db2 = PgDatabase(pg_url, data_dir=tmp_path), PgDatabase(pg_url, data_dir=tmp_path)
    try:
        s1, s2 = PgChunkStore(db1, project), PgChunkStore(db2, project)
        events: list[str] = []
        async with s1.indexing_lock(repository_id_for("/repo"), wait=False):
            with pytest.raises(RepositoryBusy):
                await indexing_service(s2, FILES).index(IndexRequest(root="/repo"), wait=False)
            run = asyncio.create_task(
                indexing_service(s2, FILES).index(
                    IndexRequest(root="/repo"), progress=lambda p, d, t: events.append(p)
                )
            )
            await asyncio.sleep(0.3)
            assert events == ["waiting"] and not run.done()
        result = await asyncio.wait_for(run, 30)
        assert result.files_indexed == 3 and events[-1] == "done"
    finally:
        await db1.close()
        await db2.close()
        await drop_projects_async(pg_url, [project])


async def test_a_released_connection_keeps_no_lock_setting_or_transaction(
    pg_url: str, tmp_path: Path
) -> None:
    """Connections go back to the pool clean: an open transaction is rolled back, and one
    taken with ``session_state`` loses the session advisory lock and settings its user left
    behind (its own cleanup failed or never ran). The one-connection pool hands the same
    backend out again, and another session then takes the lock at once."""
    database = PgDatabase(pg_url, data_dir=tmp_path, pool_size=1)
    other = await asyncpg.connect(pg_url)
    key = 7_000_000_001
    try:
        async with database.connection(session_state=True) as conn:
            pid = conn.get_server_pid()
            await conn.execute("SELECT pg_advisory_lock($1)", key)
            await conn.execute("SET work_mem = '7MB'")
        async with database.connection() as conn:
            assert conn.get_server_pid() == pid
            assert await conn.fetchval("SHOW work_mem") == "32MB"
            await conn.execute("BEGIN")
            await conn.execute("CREATE TEMP TABLE left_open (x int)")
        assert await other.fetchval("SELECT pg_try_advisory_lock($1)", key)
        async with database.connection() as conn:
            assert conn.get_server_pid() == pid
            assert not conn.is_in_transaction()
            gone = await conn.fetchval("SELECT to_regclass('pg_temp.left_open') IS NULL")
            assert gone
    finally:
        await other.close()
        await database.close()
