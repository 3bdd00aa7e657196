"""The MCP server: fastmcp over the library's workspaces, on stdio, streamable HTTP or SSE."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hmac
import ipaddress
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from codebase_mcp_search.adapters.postgres.embedded import release_embedded
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.entrypoints.about import package_version
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.mcp.errors import CodedErrors
from codebase_mcp_search.entrypoints.mcp.listing import LeanSchemas
from codebase_mcp_search.entrypoints.mcp.state import AllowedRoots, ServerState
from codebase_mcp_search.entrypoints.mcp.tools_code import register_code_tools
from codebase_mcp_search.entrypoints.mcp.tools_jobs import register_job_tools
from codebase_mcp_search.entrypoints.mcp.tools_tasks import register_task_tools
from codebase_mcp_search.entrypoints.mcp.unauthorized import ExplainUnauthorized
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.watching import running_watching
from codebase_mcp_search.entrypoints.worker import running_worker

log = logging.getLogger("codebase_mcp")

Transport = Literal["stdio", "http", "sse"]

# Sent in every session with the tools' listing (and counted in its budget): what the tool
# descriptions do not say, the order of use.
INSTRUCTIONS = """\
Code search and a task tracker. Index a repository with index_repository (re-runs are
incremental), then search_code by description or identifier. project_id picks a workspace
(default: the server's). Errors start with a stable code, e.g. VALIDATION_ERROR."""


class BearerToken(TokenVerifier):
    """One shared bearer token (CODEBASE_MCP_AUTH_TOKEN), compared in constant time."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token.encode("utf-8")

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode("utf-8"), self._token):
            return AccessToken(token=token, client_id="codebase-mcp-client", scopes=[])
        return None

    def get_middleware(self) -> list[Any]:
        """fastmcp's, and a refusal that says what is wrong and the fix (``unauthorized``)."""
        return [*super().get_middleware(), Middleware(ExplainUnauthorized)]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings, transport: Transport, host: str) -> None:
    """A server reachable from other machines needs a token and allowed roots."""
    if transport == "stdio" or is_loopback(host):
        return
    if settings.auth_token is None:
        raise ValidationFailed(
            "CODEBASE_MCP_AUTH_TOKEN",
            None,
            f"binding to {host} (not loopback) requires a bearer token: set "
            "CODEBASE_MCP_AUTH_TOKEN, or serve on 127.0.0.1",
        )
    if settings.allowed_roots is None:
        raise ValidationFailed(
            "CODEBASE_MCP_ALLOWED_ROOTS",
            None,
            f"binding to {host} (not loopback) requires the directories that may be indexed: "
            f"set CODEBASE_MCP_ALLOWED_ROOTS (paths separated by '{os.pathsep}')",
        )


def build_server(
    settings: Settings | None = None, *, shares_jobs: bool = False
) -> FastMCP[ServerState]:
    """The MCP server over the configured store, embedder and allowed roots. ``shares_jobs``:
    one of several server processes (``serve --workers``), of which one runs the job worker."""
    resolved = settings or Settings()
    roots = AllowedRoots(resolved.allowed_roots)
    current: dict[str, ServerState] = {}

    @asynccontextmanager
    async def lifespan(_server: FastMCP[ServerState]) -> AsyncIterator[ServerState]:
        async with contextlib.AsyncExitStack() as stack:
            if resolved.store == "postgres" and resolved.database_url is None:
                # First in, so last out, after the pool closed: the embedded server stops
                # with its last user (see release_embedded).
                stack.push_async_callback(
                    asyncio.to_thread, release_embedded, resolved.data_dir / "postgres"
                )
            workspaces = await stack.enter_async_context(open_workspaces(resolved))
            # The database starts (a fresh data directory's is created) while the client
            # connects: no first call waits for it, and none but the calls of that moment do.
            warming = asyncio.create_task(workspaces.warm_up(), name="database-warm-up")
            stack.push_async_callback(_ended, warming)
            state = ServerState(workspaces=workspaces, roots=roots)
            runs_jobs = resolved.job_worker and (
                not shares_jobs or stack.enter_context(job_worker_turn(resolved))
            )
            # The memory store's queue lives in this process: only its own worker can run it.
            if runs_jobs or resolved.store == "memory":
                # Entered last, so it stops (handing its jobs back) before the pool closes.
                state.worker = await stack.enter_async_context(running_worker(workspaces))
            if resolved.watch:
                # Entered after the worker, so it stops first: no job is queued by a watcher
                # while the worker hands its jobs back.
                state.watching = await stack.enter_async_context(running_watching(workspaces))
            current["state"] = state
            try:
                yield state
            finally:
                current.pop("state", None)

    auth = BearerToken(resolved.auth_token.get_secret_value()) if resolved.auth_token else None
    mcp: FastMCP[ServerState] = FastMCP(
        "codebase-mcp",
        instructions=INSTRUCTIONS,
        version=package_version(),
        lifespan=lifespan,
        middleware=[CodedErrors()],
        mask_error_details=True,
        auth=auth,
    )
    register_code_tools(mcp)
    register_task_tools(mcp)
    register_job_tools(mcp)
    mcp.add_transform(LeanSchemas())

    @mcp.custom_route("/health", methods=["GET"])
    async def health(_request: Request) -> JSONResponse:
        state = current.get("state")
        body: dict[str, Any] = {
            "status": "starting",
            "database": "unknown",
            "embedder": "unknown",
            "version": package_version(),
            "uptime_seconds": 0.0,
        }
        if state is not None:
            try:
                database = await state.workspaces.database_status()
                embedder = await state.workspaces.embedder_status()
            except Exception:  # a probe must answer, whatever fails underneath
                log.warning("health probe failed", exc_info=True)
                database, embedder = "unavailable", "unknown"
            body.update(
                status="ok" if database in ("ok", "memory") else "degraded",
                database=database,
                embedder=embedder,
                uptime_seconds=round(time.monotonic() - state.started, 1),
            )
        return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503)

    return mcp


async def _ended(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` if it still runs, and wait for it to end."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@contextlib.contextmanager
def job_worker_turn(settings: Settings) -> Iterator[bool]:
    """Whether this server process runs the job worker of a ``serve --workers`` group: the
    first to lock the data directory's ``serve-jobs.lock`` does, until it exits (the kernel
    drops the lock of a dead process; the supervisor's replacement takes it)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.data_dir / "serve-jobs.lock", "a+b") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
