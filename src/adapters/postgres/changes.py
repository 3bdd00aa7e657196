"""Which projects were written since a moment, as Postgres tells every process (LISTEN/NOTIFY).

A search reads the same things again and again that change only when a project is written:
its repository list, its rows by chunk number. What a process keeps read of a project is
kept with the ``token`` of the project taken *before* the read; while ``token`` gives the
same value, no write of the project has been seen since, and the kept data can answer
without a round trip to the database. Otherwise the caller reads (or checks) again.

How writes are seen:
- Every project schema has statement triggers on ``corpus_stats`` (moved on by every write of
  chunks or vectors) and ``repositories`` that ``pg_notify(CHANNEL, <schema>)``; dropping a
  project notifies too. Postgres delivers a notification to every listener when the writing
  transaction commits, whichever process (or version of this code) wrote.
- The feed listens on a connection of its own (opened on first need, again after a loss) and
  counts the notifications per schema.
- A write by this process counts at once when its transaction ends (``bump``), so a search
  after a write in the same process never takes what the write replaced; another process's
  write counts when its notification arrives, a few milliseconds after its commit.

No token is given while the feed is not listening (not yet connected, or the connection lost:
notifications may have been missed), and a token is good for ``TRUST_S`` seconds at most
(it names the window of time it was taken in): kept data is checked against the database at
least that often, whatever a silently broken connection might hide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import asyncpg

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.schema import CHANGES_CHANNEL
from codebase_mcp_search.core.errors import CoreError

log = logging.getLogger(__name__)

# Seconds a token stays good without a write seen: how stale a read kept by a process can be
# if notifications stop arriving on a connection that still looks open.
TRUST_S = 2.0
# Seconds between attempts to listen again after a failure.
RETRY_S = 1.0
# What leaves the feed not listening, for now (a search goes on without it).
_NOT_LISTENING: tuple[type[BaseException], ...] = (CoreError, *DRIVER_ERRORS)
# Seconds ``close`` waits for the listening connection, to finish opening and to close.
_CLOSE_WAIT_S = 2.0
_CLOSE_FAILED: tuple[type[BaseException], ...] = (TimeoutError, *DRIVER_ERRORS)

Token = tuple[int, int, int]


class ChangeFeed:
    """Counts of the writes seen per project schema; see the module docstring."""

    def __init__(self, connect: Callable[[], Awaitable[asyncpg.Connection]]) -> None:
        """``connect`` opens the connection to listen on (the pool's server)."""
        self._connect = connect
        self._conn: asyncpg.Connection | None = None
        self._counts: dict[str, int] = {}
        # Moves on whenever the feed stops listening: a token of an earlier connection never
        # matches one of a later connection (notifications in between may be lost).
        self._incarnation = 0
        self._starting: asyncio.Task[None] | None = None
        self._next_try = 0.0
        self._closed = False

    @property
    def listening(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.is_closed()

    def token(self, schema: str) -> Token | None:
        """The schema's token now (see the module docstring); None while not listening (and
        listening is then started, if it is not being started)."""
        if not self.listening:
            self._start()
            return None
        return (self._incarnation, self._counts.get(schema, 0), int(time.monotonic() / TRUST_S))

    def bump(self, schema: str) -> None:
        """A write of ``schema`` was seen (or may have been): its earlier tokens are void."""
        self._counts[schema] = self._counts.get(schema, 0) + 1

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self.bump(payload)

    def _lost(self, conn: object) -> None:
        if conn is self._conn:
            self._conn = None
            self._incarnation += 1

    def _start(self) -> None:
        if self._closed or (self._starting is not None and not self._starting.done()):
            return
        now = time.monotonic()
        if now < self._next_try:
            return
        self._next_try = now + RETRY_S
        try:
            self._starting = asyncio.get_running_loop().create_task(self._listen())
        except RuntimeError:  # no running loop: nothing to listen with
            self._starting = None

    async def _listen(self) -> None:
        conn: asyncpg.Connection | None = None
        try:
            conn = await self._connect()
            conn.add_termination_listener(self._lost)
            await conn.add_listener(CHANGES_CHANNEL, self._notified)
        except BaseException as e:
            if conn is not None:
                conn.terminate()
            if isinstance(e, _NOT_LISTENING):
                log.debug("not listening for changes: %s", e)
                return
            raise
        if self._closed:
            conn.terminate()
            return
        self._incarnation += 1
        self._conn = conn

    async def close(self) -> None:
        """Stop listening (for good)."""
        self._closed = True
        starting, self._starting = self._starting, None
        if starting is not None:
            # A connection being opened is let finish (it is then closed), unless it hangs:
            # cancelled in the middle, the driver may leave its socket behind.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(starting, timeout=_CLOSE_WAIT_S)
        conn, self._conn = self._conn, None
        self._incarnation += 1
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), timeout=_CLOSE_WAIT_S)
            except _CLOSE_FAILED:
                conn.terminate()
