"""PgDatabase: one asyncpg pool per process, migrations, workspaces and advisory locks."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import asyncpg
from pgvector.asyncpg import register_vector

from codebase_mcp_search.adapters.postgres import workspaces
from codebase_mcp_search.adapters.postgres._errors import (
    DRIVER_ERRORS,
    LOST_CONNECTION,
    redact,
    shown,
    translate,
    translate_embedded,
)
from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger
from codebase_mcp_search.adapters.postgres.changes import ChangeFeed
from codebase_mcp_search.adapters.postgres.embedded import start_embedded
from codebase_mcp_search.adapters.postgres.schema import schema_name
from codebase_mcp_search.adapters.postgres.shared_tables import GLOBAL_SQL
from codebase_mcp_search.adapters.postgres.workspaces import (
    LOCK_MIGRATIONS,
    MIGRATION_LOCK,
    Workspace,
)
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import CoreError, StoreUnavailable

log = logging.getLogger("codebase_mcp")

# Seconds a health probe (``ping``) waits for the server, by default.
PROBE_TIMEOUT_S: Final = 2.0
PING: Final = "SELECT 1"
SERVER_INFO: Final = """
    SELECT current_setting('server_version') AS server,
           (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector
"""


# Session advisory locks (``lock_key``), held until unlocked or the session is reset.
TRY_LOCK: Final = "SELECT pg_try_advisory_lock($1)"
LOCK: Final = "SELECT pg_advisory_lock($1)"
UNLOCK: Final = "SELECT pg_advisory_unlock($1)"


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (stable across processes)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """The server's version, and the version of its pgvector extension (None: not installed
    in the database)."""

    server: str
    pgvector: str | None


class PgDatabase:
    """Postgres: owns the process's asyncpg pool (and the embedded server when no URL is set).

    ``url`` None means the embedded pgserver in ``data_dir``, which stays up ``idle_s`` after
    its last user leaves (``adapters.postgres.linger``). The pool opens on first use, so a
    process that never touches Postgres never connects. ``cache_budget_mb``: what the caches of
    every project's store over this database may hold in the process (``cache_ledger``).
    """

    def __init__(
        self,
        url: str | None,
        *,
        data_dir: Path,
        pool_size: int = defaults.POOL_SIZE,
        connect_timeout_s: float = defaults.CONNECT_TIMEOUT_S,
        statement_timeout_s: float = defaults.STATEMENT_TIMEOUT_S,
        idle_s: float = defaults.PG_IDLE_S,
        cache_budget_mb: int = defaults.CACHE_BUDGET_MB,
    ) -> None:
        self._url = url
        self._idle_s = idle_s
        self._embedded = url is None
        self._data_dir = data_dir
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout_s
        self._statement_timeout = statement_timeout_s
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self._bootstrapped = False
        # Backend pids of pooled connections that changed session state (see ``connection``).
        self._session_state: set[int] = set()
        self._workspaces: dict[str, Workspace] = {}
        self._ws_lock = asyncio.Lock()
        self._background: dict[asyncio.Task[None], str] = {}
        self.changes = ChangeFeed(self._listening_connection)
        """The writes of each project seen by this process (see ``adapters.postgres.changes``)."""
        self.cache_ledger = CacheLedger.of_mib(cache_budget_mb)
        """The bytes every project's caches hold, against the budget (``cache_ledger``)."""

    @property
    def pool_size(self) -> int:
        """Most connections the pool opens."""
        return self._pool_size

    @property
    def url(self) -> str:
        """The server's URL (password removed), or the embedded data directory."""
        return redact(self._url) if self._url else f"embedded:{self._data_dir / 'postgres'}"

    @property
    def shown(self) -> str:
        """The server as any client may read it named (no password, no path: ``shown``)."""
        return "the embedded PostgreSQL" if self._embedded else f"Postgres at {shown(self.url)}"

    def error(self, exc: BaseException) -> CoreError:
        if self._embedded:
            lost = translate_embedded(exc, str(self._data_dir / "postgres"))
            if lost is not None:
                return lost
        return translate(
            exc,
            self.url if self._embedded else (self._url or self.url),
            timeout_s=self._statement_timeout,
            pool_size=self._pool_size,
            embedded=self._embedded,
        )

    def _lost(self, exc: BaseException) -> None:
        """The server or a connection went away: drop the pool (its other connections are
        as dead), so that the next use opens a new one, starting the embedded server again
        if that is what died. Statements that merely failed keep the pool."""
        # TimeoutError is an OSError, but a wait for a busy pool's connection is no loss.
        if not isinstance(exc, LOST_CONNECTION) or isinstance(exc, TimeoutError):
            return
        pool, self._pool = self._pool, None
        if pool is not None:
            log.warning("lost the connection to %s (%s); reconnecting on next use", self.url, exc)
            pool.terminate()

    async def _server_url(self) -> str:
        """The URL to connect to; the embedded server is started (again, if it died) first."""
        if self._embedded:
            self._url = await start_embedded(self._data_dir / "postgres", self._idle_s)
        assert self._url is not None
        return self._url

    async def _init_connection(self, conn: asyncpg.Connection) -> None:
        if not self._bootstrapped:
            # The pool's first connection: the vector type must exist before its codec.
            await self._bootstrap(conn)
            self._bootstrapped = True
        try:
            await register_vector(conn)
        except ValueError as e:  # pgvector raises ValueError when the type is missing
            raise StoreUnavailable(
                f"the vector extension is not installed in the database of {self.shown}: "
                "install pgvector on that server (CREATE EXTENSION vector needs it), or unset "
                "DATABASE_URL to use the embedded server",
                private=f"{self.url}: {e}",
            ) from e

    async def _bootstrap(self, conn: asyncpg.Connection) -> None:
        """Create the extension and global schema (once per pool, on its first connection:
        a command of the CLI opens no connection of its own for it), under the migration
        lock."""
        async with conn.transaction():
            await conn.execute(LOCK_MIGRATIONS, MIGRATION_LOCK)
            try:
                await conn.execute(GLOBAL_SQL)
            except (asyncpg.UndefinedFileError, asyncpg.FeatureNotSupportedError) as e:
                raise StoreUnavailable(
                    f"{self.shown} has no pgvector extension ({type(e).__name__}): "
                    "install pgvector there, or unset DATABASE_URL to use the embedded "
                    "server",
                    private=f"{self.url}: {e}",
                ) from e

    async def pool(self) -> asyncpg.Pool:
        """The pool, opened (and the database bootstrapped) on first call."""
        if self._pool is not None:
            return self._pool
        async with self._pool_lock:
            if self._pool is None:
                try:
                    url = await self._server_url()
                    self._bootstrapped = False  # a new pool: perhaps a new server
                    self._pool = await asyncpg.create_pool(
                        url,
                        min_size=1,
                        max_size=self._pool_size,
                        timeout=self._connect_timeout,
                        init=self._init_connection,
                        reset=self._reset_connection,
                        server_settings={
                            "statement_timeout": str(int(self._statement_timeout * 1000)),
                            "application_name": "codebase-mcp",
                            # BM25 over common terms aggregates 100k+ postings in memory.
                            "work_mem": "32MB",
                        },
                    )
                except CoreError:
                    raise
                except DRIVER_ERRORS as e:
                    raise self.error(e) from e
        pool = self._pool
        assert pool is not None
        return pool

    async def _listening_connection(self) -> asyncpg.Connection:
        """A connection of its own to the pool's server, for ``changes`` to listen on."""
        await self.pool()
        assert self._url is not None
        return await asyncpg.connect(
            self._url,
            timeout=self._connect_timeout,
            server_settings={"application_name": "codebase-mcp changes"},
        )

    async def own_connection(self, purpose: str) -> asyncpg.Connection:
        """A connection of its own (not pooled) to the pool's server, named ``purpose`` in
        ``pg_stat_activity``: for session state held as long as the process runs (the watch
        claims), which must not take a pooled connection. The caller closes it; driver errors
        become ``StoreUnavailable``."""
        await self.pool()
        assert self._url is not None
        try:
            return await asyncpg.connect(
                self._url,
                timeout=self._connect_timeout,
                server_settings={"application_name": f"codebase-mcp {purpose}"},
            )
        except DRIVER_ERRORS as e:
            raise self.error(e) from e

    async def _reset_connection(self, conn: asyncpg.Connection) -> None:
        """A released connection's reset, after asyncpg's own (which ends an open
        transaction): the full reset query (advisory locks, settings, cursors, listeners)
        only for a connection that changed session state. For the others it was a round
        trip of every release, several per search, on a server's busiest path."""
        pid = conn.get_server_pid()
        if pid in self._session_state:
            self._session_state.discard(pid)
            await conn.execute(conn.get_reset_query())

    @asynccontextmanager
    async def connection(self, *, session_state: bool = False) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; driver errors inside become ``StoreUnavailable``.
        ``session_state``: the caller may leave state beyond a transaction (a session
        advisory lock, ``SET``), so the connection is fully reset when released, whatever
        happened to the caller's own cleanup."""
        pool = await self.pool()
        try:
            async with pool.acquire(timeout=self._connect_timeout) as conn:
                if session_state:
                    self._session_state.add(conn.get_server_pid())
                yield conn
        except CoreError:
            raise
        except DRIVER_ERRORS as e:
            if self._pool is pool:
                self._lost(e)
            raise self.error(e) from e

    @asynccontextmanager
    async def spare_connection(
        self, wait_s: float = 0.2, *, session_state: bool = False
    ) -> AsyncIterator[asyncpg.Connection | None]:
        """A pooled connection if one is free within ``wait_s``, else None: for work that may
        as well run on a connection the caller holds (a pool shared with other projects' runs
        and searches can be busy, and its timeout must not fail optional work).
        ``session_state`` as for ``connection``."""
        pool = await self.pool()
        got: asyncpg.Connection | None
        try:
            got = await pool.acquire(timeout=wait_s)
        except TimeoutError:
            got = None
        except DRIVER_ERRORS:
            got = None
        if got is None:
            yield None
            return
        conn = got
        if session_state:
            self._session_state.add(conn.get_server_pid())
        try:
            yield conn
        except CoreError:
            raise
        except DRIVER_ERRORS as e:
            raise self.error(e) from e
        finally:
            await pool.release(conn)

    async def workspace(self, project_id: str) -> Workspace:
        """The project's schema, created and migrated to the current version on first use."""
        ws = self._workspaces.get(project_id)
        if ws is not None:
            return ws
        async with self._ws_lock:
            if project_id not in self._workspaces:
                name = schema_name(project_id)
                await self._migrate(project_id, name)
                self._workspaces[project_id] = Workspace(project_id, name)
        return self._workspaces[project_id]

    async def _migrate(self, project_id: str, name: str) -> None:
        async with self.connection() as conn:
            await workspaces.migrate(conn, project_id, name)

    async def projects(self) -> list[tuple[str, str]]:
        """Every known project as (id, schema name), by id."""
        async with self.connection() as conn:
            return await workspaces.projects(conn)

    async def server_info(self) -> ServerInfo:
        """The server's version and its pgvector's (one round trip on a pooled connection)."""
        async with self.connection() as conn:
            row = await conn.fetchrow(SERVER_INFO)
        return ServerInfo(server=row["server"], pgvector=row["pgvector"])

    async def ping(self, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        """One round trip to the server on a connection of its own (a busy pool must not make
        a health probe wait); ``StoreUnavailable`` when it does not answer. It starts the
        embedded server again if it died, and drops a pool whose server went away."""
        try:
            url = await self._server_url()
            conn = await asyncpg.connect(url, timeout=timeout_s)
            try:
                await conn.fetchval(PING, timeout=timeout_s)
            finally:
                await conn.close(timeout=timeout_s)
        except CoreError:
            raise
        except DRIVER_ERRORS as e:
            self._lost(e)
            raise self.error(e) from e

    async def workspace_sizes(self) -> dict[str, int]:
        """Bytes on disk of each project's schema (tables with their indexes and TOAST)."""
        async with self.connection() as conn:
            return await workspaces.sizes(conn)

    async def drop_workspace(self, project_id: str) -> None:
        """Remove a project's schema and everything in it, and what the process held of it."""
        name = schema_name(project_id)
        await self._cancel_background(project_id)
        try:
            async with self.connection() as conn:
                await workspaces.drop(conn, project_id, name)
        finally:
            # Also when the commit's outcome is unknown: what was kept may be gone.
            self.changes.bump(name)
            self.cache_ledger.release(project_id)
        self._workspaces.pop(project_id, None)

    def spawn(self, project_id: str, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run background maintenance of a project; ``close`` cancels what is still running."""
        task = asyncio.get_running_loop().create_task(work)
        self._background[task] = project_id
        task.add_done_callback(lambda t: self._background.pop(t, None))
        return task

    async def _cancel_background(self, project_id: str | None) -> None:
        tasks = [t for t, p in self._background.items() if project_id in (None, p)]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        """Cancel background work, stop listening for changes, then close the pool (waiting
        for connections in use)."""
        await self._cancel_background(None)
        await self.changes.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), timeout=self._connect_timeout)
            except TimeoutError:
                pool.terminate()
