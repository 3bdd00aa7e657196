"""What a client refused by the bearer token check reads: what is wrong and how to fix it.

fastmcp's check answers a wrong token with OAuth advice ("your client should automatically
re-register and obtain new tokens"), which does not apply to one shared token and sends the
user looking for a registration that does not exist; a missing token gets an empty body. This
ASGI middleware rewrites the text of those 401 answers, and only the text: the status, and the
``WWW-Authenticate`` challenge with its ``error`` attribute (present for a wrong token, absent
for a missing one, as RFC 6750 3.1 has it) stay as fastmcp made them. Neither the token nor
the one sent is ever echoed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

FIX = "send the header 'Authorization: Bearer <CODEBASE_MCP_AUTH_TOKEN>'"
WRONG = (
    "the bearer token sent is not this server's: "
    + FIX
    + " with the token the server was started with (no OAuth registration applies)"
)
MISSING = "no bearer token was sent: this server requires one; " + FIX

# The quoted description of a challenge: ASCII without quotes or backslashes, so the texts
# above drop into it unescaped.
_DESCRIPTION = re.compile(rb'error_description="[^"]*"')


class ExplainUnauthorized:
    """Rewrites the text of a bearer token refusal (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: bytes | None = None

        async def explained(message: Message) -> None:
            nonlocal body
            if message["type"] == "http.response.start" and message["status"] == 401:
                rewritten = _rewritten(message)
                if rewritten is not None:
                    message, body = rewritten
            elif message["type"] == "http.response.body" and body is not None:
                if message.get("more_body", False):
                    return  # the original body, replaced as a whole at its end
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, explained)


def _rewritten(start: Message) -> tuple[Message, bytes] | None:
    """A 401's start with the challenge's description replaced, and the new body; None for a
    401 that is not a bearer token refusal."""
    headers: list[tuple[bytes, bytes]] = list(start.get("headers", []))
    challenge = next((v for k, v in headers if k.lower() == b"www-authenticate"), None)
    if challenge is None or not challenge.lower().startswith(b"bearer"):
        return None
    invalid = b'error="invalid_token"' in challenge
    text = WRONG if invalid else MISSING
    if invalid:
        described = f'error_description="{text}"'.encode("ascii")
        challenge = _DESCRIPTION.sub(lambda _: described, challenge, count=1)
    payload: dict[str, Any] = {"error": "invalid_token" if invalid else "unauthorized"}
    payload["error_description"] = text
    body = json.dumps(payload).encode()
    kept = [
        (k, v)
        for k, v in headers
        if k.lower() not in (b"www-authenticate", b"content-length", b"content-type")
    ]
    kept += [
        (b"www-authenticate", challenge),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    return {**start, "headers": kept}, body
