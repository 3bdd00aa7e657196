"""What a process keeps read of a project (its repository list, the copy of its vectors) is
reused only while no write of the project was seen: a write of this process voids it at once,
another process's write as soon as its notification arrives, and without a listening
connection (or past the trust window) everything is checked against the database again."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase, changes
from codebase_mcp_search.adapters.postgres.changes import ChangeFeed
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.adapters.postgres.schema import CHANGES_CHANNEL
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import NO_FILTER, listening, statements, until

DIM = 16
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("no_trust_window")


async def _load(store: PgChunkStore, n_files: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": "random", "embedding_dimension": DIM})
    )
    batches = [
        file_batch(
            "r1",
            f"pkg/mod{i}.py",
            [f"def f{i}_{j}():\n    return {j}" for j in range(3)],
            rng.normal(size=(3, DIM)).tolist(),
        )
        for i in range(n_files)
    ]
    await store.replace_files("r1", batches)


async def test_the_repository_list_is_kept_until_a_write_is_seen(
    db: PgDatabase, other: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, theirs = PgChunkStore(db, project), PgChunkStore(other, project)
    await store.save_repository(repo("r1"))
    await listening(store)
    assert [r.id for r in await store.list_repositories()] == ["r1"]
    seen = statements(db, monkeypatch)
    assert [r.id for r in await store.list_repositories()] == ["r1"]
    assert (await store.get_repository("r1")).id == "r1"
    assert seen == []  # both answered from the list kept
    # This process's own write: seen at once, without any notification (none is taken in
    # meanwhile).
    feed, listener = db.changes, db.changes._conn
    assert listener is not None
    await listener.remove_listener(CHANGES_CHANNEL, feed._notified)
    await store.save_repository(repo("r2", "/repos/r2", "r2"))
    assert [r.id for r in await store.list_repositories()] == ["r1", "r2"]
    await listener.add_listener(CHANGES_CHANNEL, feed._notified)
    # Another process's write: seen when its notification arrives.
    seen.clear()
    await theirs.save_repository(repo("r3", "/repos/r3", "r3"))

    async def listed() -> list[str]:
        return [r.id for r in await store.list_repositories()]

    for _ in range(500):
        if await listed() == ["r1", "r2", "r3"]:
            break
        await asyncio.sleep(0.02)
    assert await listed() == ["r1", "r2", "r3"]
    await theirs.delete_repository("r2")
    for _ in range(500):
        if await listed() == ["r1", "r3"]:
            break
        await asyncio.sleep(0.02)
    assert await listed() == ["r1", "r3"]


async def test_a_write_by_another_process_voids_the_copy_of_the_vectors(
    db: PgDatabase, pg_url: str, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project)
    await _load(store, 20)
    await listening(store)
    query = np.random.default_rng(3).normal(size=DIM).tolist()
    for _ in range(2):
        await store.vector_search(query, NO_FILTER, 5)
    copy = store._vectors
    assert isinstance(copy, VectorCopy)
    await until(lambda: copy.held is not None, "a copy read")
    await store.vector_search(query, NO_FILTER, 5)  # checked once against the database
    seen = statements(db, monkeypatch)
    hits, total = await store.vector_search(query, NO_FILTER, 5)
    assert total == 60 and len(hits) == 5 and seen == []  # answered in the process
    # A real other process writes a file holding the query's own direction.
    ws = await store.workspace()
    token = db.changes.token(ws.schema)
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})  # for tests.factories
        from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
        from tests.factories import file_batch

        async def main():
            db = PgDatabase({pg_url!r}, data_dir=Path({str(Path.cwd())!r}))
            store = PgChunkStore(db, {project!r})
            batch = file_batch("r1", "pkg/new.py", ["def exact():\\n    pass"], [{query!r}])
            await store.replace_files("r1", [batch])
            await db.close()

        asyncio.run(main())
        """
    )
    writer = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
    assert await asyncio.wait_for(writer.wait(), 120) == 0
    await until(lambda: db.changes.token(ws.schema) != token, "the write's notification")
    hits, total = await store.vector_search(query, NO_FILTER, 5)
    assert total == 61 and hits[0].chunk.file_path == "pkg/new.py"
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert any("generation" in s for s in seen)  # checked, found stale, the scan answered


async def test_without_a_listening_connection_everything_is_checked(
    db: PgDatabase, other: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, theirs = PgChunkStore(db, project), PgChunkStore(other, project)
    await store.save_repository(repo("r1"))
    first = await listening(store)
    await store.list_repositories()
    # The listening connection is killed (as a server restart or a network cut would).
    listener = db.changes._conn
    assert listener is not None
    async with other.connection() as conn:
        assert await conn.fetchval("SELECT pg_terminate_backend($1)", listener.get_server_pid())
    ws = await store.workspace()
    await until(lambda: not db.changes.listening, "the loss noticed")
    assert db.changes.token(ws.schema) is None
    # Meanwhile another process writes: nothing may come from what was kept.
    seen = statements(db, monkeypatch)
    await theirs.save_repository(repo("r2", "/repos/r2", "r2"))
    assert [r.id for r in await store.list_repositories()] == ["r1", "r2"]
    assert seen  # read from the database
    # Listening again (the next asking for a token starts it), with tokens that match none
    # taken before the loss.
    await until(lambda: db.changes.token(ws.schema) is not None, "listening again", 15.0)
    again = db.changes.token(ws.schema)
    assert again is not None and again != first


async def test_tokens_expire_with_the_trust_window(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    monkeypatch.setattr(changes, "TRUST_S", 0.05)
    await listening(store)
    await store.list_repositories()
    await asyncio.sleep(0.12)
    seen = statements(db, monkeypatch)
    await store.list_repositories()
    assert seen  # the window passed: read again


async def test_dropping_a_project_is_seen_by_other_processes(
    db: PgDatabase, other: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    ws = await store.workspace()
    token = await listening(store)
    await other.drop_workspace(project)
    await until(lambda: db.changes.token(ws.schema) != token, "the drop's notification")


async def test_a_feed_that_cannot_connect_gives_no_token_and_retries() -> None:
    attempts = 0

    async def refused() -> Any:
        nonlocal attempts
        attempts += 1
        raise OSError("connection refused")

    feed = ChangeFeed(refused)
    assert feed.token("s") is None
    await until(lambda: attempts == 1, "a first attempt")
    assert feed.token("s") is None and attempts == 1  # not again before RETRY_S
    feed._next_try = 0.0
    assert feed.token("s") is None
    await until(lambda: attempts == 2, "a second attempt")
    await feed.close()
    feed._next_try = 0.0
    assert feed.token("s") is None
    await asyncio.sleep(0.05)
    assert attempts == 2  # closed for good
