"""uvicorn's httptools protocol with a bound on the request head (request line and headers).

httptools buffers a header until it ends, and uvicorn keeps every header it is given, so one
client could make the server hold a header of any size before any middleware runs. This
counts the bytes of a head still incomplete after each read and answers 431 once they pass
``MAX_HEAD_BYTES``, closing the connection: the server holds at most the limit plus one read.
Without httptools (Windows), uvicorn's h11 protocol has the same bound built in
(``h11_max_incomplete_event_size``) and answers 400.
"""

from __future__ import annotations

import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from codebase_mcp_search.entrypoints.mcp.guards import MAX_HEAD_BYTES

log = logging.getLogger("codebase_mcp")


class BoundedHttpTools(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._in_head or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            log.warning("refused a request head over %d bytes", MAX_HEAD_BYTES)
            body = (
                f"HEADERS_TOO_LARGE: the request line and headers may be at most "
                f"{MAX_HEAD_BYTES} bytes"
            ).encode()
            self.transport.write(
                b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                b"content-type: text/plain; charset=utf-8\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n"
                b"connection: close\r\n\r\n" + body
            )
            self.transport.close()
            self._in_head = False
