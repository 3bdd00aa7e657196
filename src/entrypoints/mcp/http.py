"""The HTTP transports (streamable HTTP, SSE) on uvicorn: one server process, or several
sharing the port (``serve --workers N``; on Linux a listening socket each, see ``balanced``).

The app's lifespan runs inside uvicorn's (startup and shutdown events), not around its
``serve`` as ``FastMCP.run`` has it: uvicorn re-raises a SIGTERM it caught once it has shut
down, and with the default action that ends the process before anything wrapped around
``serve`` can finish. So a stopped server hands its jobs back, closes its pool and stops the
embedded Postgres it started.
"""

from __future__ import annotations

import importlib.util
import logging
import socket
from typing import TypeVar

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from codebase_mcp_search.entrypoints.about import package_version
from codebase_mcp_search.entrypoints.mcp.balanced import BalancedGroup, balances
from codebase_mcp_search.entrypoints.mcp.gc_settings import settle_heap
from codebase_mcp_search.entrypoints.mcp.guards import MAX_HEAD_BYTES, Exposure, RequestGuard
from codebase_mcp_search.entrypoints.mcp.server import Transport, build_server
from codebase_mcp_search.entrypoints.settings import Settings

log = logging.getLogger("codebase_mcp")

BOUNDED_HTTPTOOLS = "codebase_mcp_search.entrypoints.mcp.bounded_head:BoundedHttpTools"
"""A path, not the class: it imports httptools (not on Windows), and each process of
``serve --workers`` imports it itself."""

# Seconds uvicorn waits for open requests (a streaming index_repository) at shutdown.
GRACEFUL_SHUTDOWN_S = 2


def worker_app() -> Starlette:
    """One process of ``serve --workers N`` (a uvicorn factory: settings from the
    environment). Stateless streamable HTTP with JSON responses: any process answers any
    request, as no session lives in one; so no progress notifications (follow a long run
    with start_indexing_background and get_job_status)."""
    settings = Settings()
    app: Starlette = build_server(settings, shares_jobs=True).http_app(
        stateless_http=True, json_response=True
    )
    settle_heap()
    return guarded(app, settings)


App = TypeVar("App", bound=Starlette)


def guarded(app: App, settings: Settings) -> App:
    """``app`` behind the request checks of ``guards``, outermost (before authentication)."""
    app.add_middleware(
        RequestGuard,
        exposure=Exposure(
            has_token=settings.auth_token is not None,
            has_roots=settings.allowed_roots is not None,
            allowed_hosts=settings.allowed_hosts,
            allowed_origins=settings.allowed_origins,
        ),
    )
    return app


def _config(app: Starlette | str, host: str, port: int, workers: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        factory=isinstance(app, str),
        host=host,
        # Both bound the request head (see bounded_head); httptools is the faster parser.
        http=BOUNDED_HTTPTOOLS if importlib.util.find_spec("httptools") else "h11",
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        port=port,
        workers=workers,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        # Our own start line says where it listens; a line per request is noise.
        access_log=False,
        log_level="warning",
    )


def serve_http(
    settings: Settings, transport: Transport, host: str, port: int, workers: int
) -> None:
    """Serve ``transport`` (http or sse) until a signal; ``workers`` processes for http."""
    if workers == 1:
        log.info("codebase-mcp %s on http://%s:%d (%s)", package_version(), host, port, transport)
        app = build_server(settings).http_app(transport="sse" if transport == "sse" else "http")
        app = guarded(app, settings)
        settle_heap()
        uvicorn.Server(_config(app, host, port, 1)).run()
        return
    log.info(
        "codebase-mcp %s on http://%s:%d (http, %d processes)",
        package_version(),
        host,
        port,
        workers,
    )
    config = _config("codebase_mcp_search.entrypoints.mcp.http:worker_app", host, port, workers)
    if balances():
        BalancedGroup(config, workers).run()
        return
    # What uvicorn.run does for workers, plus TCP_NODELAY on the shared socket: its children
    # rebuild the socket without a protocol number, so asyncio does not set it on their
    # connections, and Nagle's algorithm held every response back ~40 ms. An accepted
    # connection inherits the option from the listening socket.
    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()
