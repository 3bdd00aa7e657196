"""What an HTTP request must pass before it reaches authentication or a tool.

- **Exposure.** A server reachable from other machines needs a bearer token and allowed
  roots. ``serve`` refuses to start without them; this checks it again per request, from the
  address the connection arrived on, so an app mounted some other way (``uvicorn --factory
  ...:worker_app --host 0.0.0.0``, which never runs ``serve``'s check) is as safe.
- **Host and Origin** (DNS rebinding). A web page can make the browser send requests to
  ``127.0.0.1``: under a name of its own that resolves there (the ``Host`` header gives it
  away) or from its own origin (the ``Origin`` header). A server without a token refuses both
  unless the name is a loopback one or allowed (``CODEBASE_MCP_ALLOWED_HOSTS``,
  ``CODEBASE_MCP_ALLOWED_ORIGINS``). A request with no ``Origin`` (any client that is not a
  browser) is judged on ``Host`` alone. With a token the page cannot authenticate, so the
  names are checked only when a list is configured: behind a proxy the name is the proxy's.
- **Size.** A body over ``MAX_BODY_BYTES`` is refused before it is read (by its
  ``Content-Length``) or as soon as it passes the limit (chunked). The request head is bounded
  in the HTTP protocol (``BoundedHttpTools``), before any of this runs.

The refusals are plain text starting with a stable code and say what would let the request
through; the server logs each one.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("codebase_mcp")

MAX_BODY_BYTES = 1 << 20
"""The largest request body: a tool call's arguments are at most tens of kilobytes."""
MAX_HEAD_BYTES = 64 << 10
"""The largest request line plus headers (common servers allow 8-16 KiB)."""
LOOPBACK_NAMES = frozenset({"localhost"})
SHOWN_CHARS = 100


def is_loopback_name(host: str) -> bool:
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback  # a dual-stack socket's IPv4 peer
    return address.is_loopback


def split_host(value: str) -> tuple[str, str]:
    """``Host`` header -> (name without brackets, lower case; port or "")."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest.removeprefix(":")
    if value.count(":") == 1:
        name, _, port = value.partition(":")
        return name.rstrip("."), port
    return value.rstrip("."), ""


@dataclass(frozen=True)
class Exposure:
    """What the server was configured with, for the per-request checks."""

    has_token: bool
    has_roots: bool
    allowed_hosts: Sequence[str] | None
    allowed_origins: Sequence[str] | None

    @property
    def checks_names(self) -> bool:
        return not self.has_token or self.allowed_hosts is not None

    def host_allowed(self, header: str, local: str | None) -> bool:
        name, port = split_host(header)
        # A page cannot rebind a bare address: the Host that names the address the request
        # came in on is the address itself.
        if is_loopback_name(name) or (local is not None and name == local.lower()):
            return True
        return any(
            fnmatch.fnmatchcase(f"{name}:{port}" if ":" in pattern else name, pattern)
            for pattern in self.allowed_hosts or ()
        )

    def origin_allowed(self, origin: str) -> bool:
        origin = origin.strip().lower().rstrip("/")
        try:
            parts = urlsplit(origin)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            return False
        if parts.scheme in ("http", "https") and is_loopback_name(parts.hostname or ""):
            return True
        return any(fnmatch.fnmatchcase(origin, o) for o in self.allowed_origins or ())


class Refusal(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def shown(value: str) -> str:
    return repr(value[:SHOWN_CHARS] + ("..." if len(value) > SHOWN_CHARS else ""))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def check_request(exposure: Exposure, scope: Scope) -> None:
    """Raises ``Refusal`` when the request must not reach the app."""
    server = scope.get("server")
    local = server[0] if server else None
    # A Unix socket (no address) is reachable only through its file's permissions.
    if local is not None and not is_loopback_name(str(local).lower()):
        if not exposure.has_token:
            raise Refusal(
                403,
                "EXPOSED_WITHOUT_TOKEN",
                f"this server was reached on {local}, not a loopback address, and has no "
                "bearer token: set CODEBASE_MCP_AUTH_TOKEN (and CODEBASE_MCP_ALLOWED_ROOTS) "
                "before serving beyond loopback, or bind to 127.0.0.1",
            )
        if not exposure.has_roots:
            raise Refusal(
                403,
                "EXPOSED_WITHOUT_ROOTS",
                f"this server was reached on {local}, not a loopback address, and has no "
                "allowed roots: set CODEBASE_MCP_ALLOWED_ROOTS to the directories clients may "
                "index, or bind to 127.0.0.1",
            )
    if not exposure.checks_names:
        return
    host = _header(scope, b"host") or ""
    if not exposure.host_allowed(host, None if local is None else str(local)):
        raise Refusal(
            421,
            "HOST_NOT_ALLOWED",
            f"Host {shown(host)} is not a name this server answers to (it refuses names other "
            "than loopback ones against DNS rebinding): address it as 127.0.0.1 or localhost, "
            "or add the name to CODEBASE_MCP_ALLOWED_HOSTS",
        )
    origin = _header(scope, b"origin")
    if origin is not None and not exposure.origin_allowed(origin):
        raise Refusal(
            403,
            "ORIGIN_NOT_ALLOWED",
            f"Origin {shown(origin)} may not call this server (a web page's requests are "
            "refused against DNS rebinding): add the origin to CODEBASE_MCP_ALLOWED_ORIGINS "
            "if you trust that page",
        )


class RequestGuard:
    """Pure ASGI middleware, outermost: exposure, Host and Origin, then the body's size."""

    def __init__(self, app: ASGIApp, exposure: Exposure, max_body: int = MAX_BODY_BYTES):
        self.app, self.exposure, self.max_body = app, exposure, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            check_request(self.exposure, scope)
            length = _header(scope, b"content-length")
            if length is not None and (not length.strip().isdigit() or int(length) > self.max_body):
                raise self._too_large()
        except Refusal as refusal:
            await self._refuse(scope, send, refusal)
            return
        if length is None and _header(scope, b"transfer-encoding") is not None:
            replay = await self._buffered(receive, scope, send)
            if replay is None:
                return
            receive = replay
        await self.app(scope, receive, send)

    def _too_large(self) -> Refusal:
        return Refusal(
            413,
            "REQUEST_TOO_LARGE",
            f"a request body may be at most {self.max_body} bytes; tool arguments this large "
            "are refused",
        )

    async def _buffered(self, receive: Receive, scope: Scope, send: Send) -> Receive | None:
        """A body of unknown length, read up to the limit: the app then reads it from memory."""
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body:
                await self._refuse(scope, send, self._too_large())
                return None
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        return replay

    @staticmethod
    async def _refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
        client = scope.get("client")
        log.warning("refused a request from %s: %s", client[0] if client else "?", refusal.code)
        body = f"{refusal.code}: {refusal.message}".encode()
        headers: list[Any] = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
