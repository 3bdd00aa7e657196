"""Postgres faults: a write killed mid-transaction, and driver errors translated into
``StoreUnavailable`` with actionable messages."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres._errors import translate
from codebase_mcp_search.core.errors import (
    StoreUnavailable,
)
from tests.factories import file_batch, repo


async def test_killed_connection_mid_write_keeps_the_old_chunks(
    db: PgDatabase, project: str, pg_url: str
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    await store.replace_files("r1", [file_batch("r1", "a.py", ["def old():\n    return 1"])])
    ws = await store.workspace()
    blocker, watcher = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        # Hold the statistics row so the replacement blocks at the end of its transaction,
        # after it has deleted the old chunks and copied the new ones; then kill it.
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(f"SELECT * FROM {ws.quoted}.corpus_stats FOR UPDATE")
        write = asyncio.create_task(
            store.replace_files(
                "r1", [file_batch("r1", "a.py", ["def new_version():\n    return two + three"])]
            )
        )
        for _ in range(100):
            pid = await watcher.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%corpus_stats%'"
            )
            if pid:
                break
            await asyncio.sleep(0.05)
        assert pid, "the replacement never reached the statistics update"
        await blocker.execute("SELECT pg_terminate_backend($1)", pid)
        with pytest.raises(StoreUnavailable) as err:
            await write
        assert "lost" in str(err.value) or "terminat" in str(err.value)
        await tx.rollback()
    finally:
        await blocker.close()
        await watcher.close()
    chunks = await store.chunks("r1")
    assert [c.content for c in chunks] == ["def old():\n    return 1"]
    assert await store.file_texts("r1", ["a.py"]) == {"a.py": "def old():\n    return 1"}


async def test_connection_refused_names_the_url(tmp_path: Path) -> None:
    db = PgDatabase("postgresql://u:secret@127.0.0.1:1/x", data_dir=tmp_path, connect_timeout_s=3)
    with pytest.raises(StoreUnavailable) as err:
        await db.workspace("default")
    msg = str(err.value)
    assert err.value.code == "DATABASE_ERROR" and "refused" in msg
    assert "127.0.0.1:1" in msg and "secret" not in msg and "***" in msg


async def test_pool_exhaustion_and_statement_timeout_are_translated(
    pg_url: str, tmp_path: Path
) -> None:
    db = PgDatabase(
        pg_url, data_dir=tmp_path, pool_size=2, connect_timeout_s=0.5, statement_timeout_s=0.2
    )
    try:
        async with db.connection(), db.connection():
            with pytest.raises(StoreUnavailable) as err:
                async with db.connection():
                    pass
            assert "pool of 2" in str(err.value) and "CODEBASE_MCP_POOL_SIZE" in str(err.value)
        with pytest.raises(StoreUnavailable) as err:
            async with db.connection() as conn:
                await conn.execute("SELECT pg_sleep(2)")
        assert "statement timeout" in str(err.value)
    finally:
        await db.close()


async def test_lost_connection_is_translated(db: PgDatabase, pg_url: str) -> None:
    killer = await asyncpg.connect(pg_url)
    try:
        with pytest.raises(StoreUnavailable) as err:
            async with db.connection() as conn:
                pid = await conn.fetchval("SELECT pg_backend_pid()")
                await killer.execute("SELECT pg_terminate_backend($1)", pid)
                await asyncio.sleep(0.1)
                await conn.fetchval("SELECT 1")
        assert "lost" in str(err.value) or "terminat" in str(err.value)
    finally:
        await killer.close()
    async with db.connection() as conn:  # the pool recovers
        assert await conn.fetchval("SELECT 1") == 1


def test_authentication_failure_message() -> None:
    exc = asyncpg.InvalidPasswordError("password authentication failed for user bob")
    err = translate(exc, "postgresql://bob:pw@db:5432/x", timeout_s=1, pool_size=2)
    assert isinstance(err, StoreUnavailable)
    assert "authentication failed" in str(err) and "db:5432" in str(err) and "pw@" not in str(err)
