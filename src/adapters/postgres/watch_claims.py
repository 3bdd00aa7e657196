"""PgWatchClaims: which process watches a repository, as session advisory locks held on one
connection of the process's own (every process on the database sees them; a dead process's
connection, and its locks, go with it)."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.database import (
    TRY_LOCK,
    UNLOCK,
    PgDatabase,
    lock_key,
)

PING = "SELECT 1"


def watch_key(project_id: str, root: str) -> int:
    """The advisory lock key of watching ``root`` in ``project_id``."""
    return lock_key("watch", project_id, root)


class PgWatchClaims:
    """Postgres session advisory locks behind ``WatchClaims``, on one connection opened on the
    first claim (a pooled one would be held for the life of the process)."""

    def __init__(self, database: PgDatabase) -> None:
        self._database = database
        self._conn: asyncpg.Connection | None = None
        self._held: set[int] = set()
        self._lock = asyncio.Lock()

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            self._held.clear()
            self._conn = await self._database.own_connection("watch claims")
        return self._conn

    async def claim(self, project_id: str, root: str) -> bool:
        key = watch_key(project_id, root)
        async with self._lock:
            if key in self._held:
                return True
            conn = await self._connection()
            try:
                got = bool(await conn.fetchval(TRY_LOCK, key))
            except DRIVER_ERRORS as e:
                raise self._database.error(e) from e
            if got:
                self._held.add(key)
            return got

    async def release(self, project_id: str, root: str) -> None:
        key = watch_key(project_id, root)
        async with self._lock:
            if key not in self._held:
                return
            self._held.discard(key)
            if self._conn is not None and not self._conn.is_closed():
                with contextlib.suppress(*DRIVER_ERRORS):
                    await self._conn.fetchval(UNLOCK, key)

    async def check(self) -> bool:
        async with self._lock:
            conn = self._conn
            if conn is None or conn.is_closed():
                return not self._held
            try:
                await conn.fetchval(PING)
            except DRIVER_ERRORS:
                self._held.clear()
                with contextlib.suppress(*DRIVER_ERRORS):
                    conn.terminate()
                return False
            return True

    async def close(self) -> None:
        """Give every claim up (closing the connection releases its locks)."""
        async with self._lock:
            conn, self._conn = self._conn, None
            self._held.clear()
            if conn is not None and not conn.is_closed():
                with contextlib.suppress(*DRIVER_ERRORS, OSError):
                    await asyncio.wait_for(conn.close(), timeout=5)
