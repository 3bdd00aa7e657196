"""Serving the MCP server on a transport: stdio here; streamable HTTP and SSE in
``mcp.http`` (uvicorn, imported only for them)."""

from __future__ import annotations

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.entrypoints.mcp.gc_settings import settle_heap
from codebase_mcp_search.entrypoints.mcp.server import Transport, build_server, check_exposure
from codebase_mcp_search.entrypoints.settings import DEFAULT_HOST, DEFAULT_PORT, Settings

MAX_WORKERS = 64


def serve(
    settings: Settings,
    transport: Transport = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workers: int = 1,
) -> None:
    """Run the server until it is stopped (stdin closed, or a signal). ``workers`` > 1 (HTTP
    only): that many processes share the port (see ``mcp.http``)."""
    check_exposure(settings, transport, host)
    if not 1 <= workers <= MAX_WORKERS:
        raise ValidationFailed(
            "--workers", workers, f"must be between 1 and {MAX_WORKERS} server processes"
        )
    if workers > 1 and transport != "http":
        raise ValidationFailed(
            "--workers", workers, "several server processes need --transport http"
        )
    if workers > 1 and settings.store == "memory":
        raise ValidationFailed(
            "--workers",
            workers,
            "several server processes need a shared store: the memory store lives in one "
            "process (unset CODEBASE_MCP_STORE, or serve one process)",
        )
    if transport == "stdio":
        server = build_server(settings)
        settle_heap()
        server.run("stdio", show_banner=False)
        return
    from codebase_mcp_search.entrypoints.mcp.http import (
        serve_http,  # uvicorn only for the HTTP transports
    )

    serve_http(settings, transport, host, port, workers)
