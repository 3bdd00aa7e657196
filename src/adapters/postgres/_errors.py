"""Translation of asyncpg / OS errors into core errors with actionable messages."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from codebase_mcp_search.core.errors import CoreError, StoreUnavailable


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable DATABASE_URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def translate(exc: BaseException, url: str, *, timeout_s: float, pool_size: int) -> CoreError:
    """The core error for a driver failure talking to the server at ``url``."""
    where = redact(url)
    if isinstance(exc, CoreError):
        return exc
    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        return StoreUnavailable(
            f"authentication failed at {where}: check the user name and password in "
            f"DATABASE_URL ({exc})"
        )
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return StoreUnavailable(
            f"the database named in {where} does not exist: create it (createdb) or fix "
            "DATABASE_URL"
        )
    if isinstance(exc, asyncpg.QueryCanceledError):
        return StoreUnavailable(
            f"a statement on {where} was cancelled after the {timeout_s:g} s statement timeout: "
            "the server is overloaded or a lock is held; raise CODEBASE_MCP_STATEMENT_TIMEOUT "
            "or retry"
        )
    if isinstance(exc, asyncpg.TooManyConnectionsError):
        return StoreUnavailable(
            f"the server at {where} refuses more connections: lower CODEBASE_MCP_POOL_SIZE "
            "or raise max_connections"
        )
    if isinstance(
        exc,
        asyncpg.ConnectionDoesNotExistError
        | asyncpg.InterfaceError
        | asyncpg.AdminShutdownError
        | asyncpg.CannotConnectNowError
        | ConnectionResetError
        | BrokenPipeError,
    ):
        return StoreUnavailable(
            f"the connection to {where} was lost ({type(exc).__name__}: {exc}); nothing half "
            "written was kept: check the server, then retry"
        )
    if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
        return StoreUnavailable(
            f"cannot connect to Postgres at {where}: connection refused; check that the server "
            "is running and that the host and port in DATABASE_URL are right"
        )
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return StoreUnavailable(
            f"no database connection to {where} within {timeout_s:g} s (pool of {pool_size}): "
            "the server is unreachable or every connection is busy; raise "
            "CODEBASE_MCP_POOL_SIZE or retry"
        )
    if isinstance(exc, OSError):
        return StoreUnavailable(f"cannot reach Postgres at {where}: {exc}")
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", "?")
        return StoreUnavailable(f"Postgres at {where} failed (SQLSTATE {state}): {exc}")
    return StoreUnavailable(f"Postgres at {where} failed: {type(exc).__name__}: {exc}")


DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    # Raised by the driver when a connection dies under it (seen as "cannot switch to
    # state 15" on release while the server was killed).
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
    asyncio.TimeoutError,
)

LOST_CONNECTION: tuple[type[BaseException], ...] = (
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.AdminShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.CrashShutdownError,
    OSError,
)
"""Failures that mean the server or the connection is gone (not a failed statement): the
pool is dropped, and the next use opens a new one (starting the embedded server again)."""


def translate_embedded(exc: BaseException, data_dir: str) -> CoreError | None:
    """For the embedded server, the message of a lost connection (None: not one)."""
    if not isinstance(exc, LOST_CONNECTION):
        return None
    return StoreUnavailable(
        f"the embedded PostgreSQL (data directory {data_dir}) is not answering "
        f"({type(exc).__name__}: {exc}); it is started again on the next call: retry in a "
        "few seconds ('codebase-mcp doctor' checks it)"
    )
