"""Translation of asyncpg / OS errors into core errors with actionable messages.

A message may reach a remote client (an MCP tool error, a job's ``error_message``): it never
holds a path of the server's file system (the embedded server's data directory, a Unix
socket's directory, a driver's text that may name files). Those go in the error's
``private`` detail, which the server logs and a local command line prints."""

from __future__ import annotations

import asyncio
from urllib.parse import unquote, urlsplit, urlunsplit

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


def shown(url: str) -> str:
    """How a message names the server at ``url`` to any client: its scheme, user, host, port
    and database, never its password (``***``), nor a Unix socket's directory (a path of the
    server's file system; the server's log has it)."""
    try:
        parts = urlsplit(redact(url))
    except ValueError:
        return "<unparseable DATABASE_URL>"
    user, at, host = parts.netloc.rpartition("@")
    socket = unquote(host).startswith("/") or "host=" in parts.query
    if unquote(host).startswith("/"):
        host = ""
    text = urlunsplit(parts._replace(netloc=f"{user}{at}{host}", query="", fragment=""))
    return f"{text} (a Unix socket)" if socket else text


def translate(
    exc: BaseException, url: str, *, timeout_s: float, pool_size: int, embedded: bool = False
) -> CoreError:
    """The core error for a driver failure talking to the server at ``url`` (``embedded``: the
    embedded server, whose URL names its data directory).

    Its message is what any client may read: it names the server without a path and the
    failure by its kind; the driver's own text, which may hold paths of the server's file
    system, is the error's ``private`` detail (the server's log, a local command line)."""
    if isinstance(exc, CoreError):
        return exc
    where = "the embedded PostgreSQL" if embedded else f"Postgres at {shown(url)}"
    kind = type(exc).__name__
    private = f"{redact(url)}: {kind}: {exc}"

    def unavailable(message: str) -> StoreUnavailable:
        return StoreUnavailable(message, private=private)

    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        return unavailable(
            f"authentication failed for {where}: check the user name and password in "
            f"DATABASE_URL ({kind})"
        )
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return unavailable(
            f"the database named for {where} does not exist: create it (createdb) or fix "
            "DATABASE_URL"
        )
    if isinstance(exc, asyncpg.QueryCanceledError):
        return unavailable(
            f"a statement on {where} was cancelled after the {timeout_s:g} s statement timeout: "
            "the server is overloaded or a lock is held; raise CODEBASE_MCP_STATEMENT_TIMEOUT "
            "or retry"
        )
    if isinstance(exc, asyncpg.TooManyConnectionsError):
        return unavailable(
            f"{where} refuses more connections: lower CODEBASE_MCP_POOL_SIZE or raise "
            "max_connections"
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
        return unavailable(
            f"the connection to {where} was lost ({kind}); nothing half written was kept: "
            "check the server, then retry"
        )
    if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
        return unavailable(
            f"cannot connect to {where}: connection refused; check that the server is running "
            "and that the host and port in DATABASE_URL are right"
        )
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return unavailable(
            f"no database connection to {where} within {timeout_s:g} s (pool of {pool_size}): "
            "the server is unreachable or every connection is busy; raise "
            "CODEBASE_MCP_POOL_SIZE or retry"
        )
    if isinstance(exc, OSError):
        return unavailable(f"cannot reach {where} ({kind})")
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", "?")
        return unavailable(f"{where} failed ({kind}, SQLSTATE {state})")
    return unavailable(f"{where} failed ({kind})")


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
    """For the embedded server, the error of a lost connection (None: not one); its data
    directory and the driver's text are the private detail (see ``translate``)."""
    if not isinstance(exc, LOST_CONNECTION):
        return None
    return StoreUnavailable(
        f"the embedded PostgreSQL is not answering ({type(exc).__name__}); it is started again "
        "on the next call: retry in a few seconds ('codebase-mcp doctor' checks it)",
        private=f"data directory {data_dir}: {type(exc).__name__}: {exc}",
    )
