"""Real embedding servers on 127.0.0.1 for tests: the Ollama and the OpenAI embeddings APIs.

One ``EmbeddingServer`` (stdlib ``ThreadingHTTPServer`` in a daemon thread, on a free port)
answers both APIs:

- Ollama at ``server.url``: ``POST /api/embed``, the legacy ``POST /api/embeddings`` and
  ``GET /api/tags``;
- OpenAI at ``server.openai_url`` (``<url>/v1``): ``POST /v1/embeddings``.

Vectors come from ``HashingEmbedder``, so a query is closer to a document sharing its words
than to one that does not. Every request is recorded (``server.requests``) with its path,
JSON payload and headers, and the server counts the most embedding requests it was answering
at once (``server.max_concurrency``).

Faults are knobs, set as keyword arguments or as attributes while the server runs::

    with embedding_server(models={"nomic-embed-text:latest"}, delay_s=0.2) as server:
        server.fail(2, status=429, retry_after=0.01)  # the next 2 embedding requests
        server.wrong_dimension_on = 3                 # the 3rd embedding request
        ...

Faults apply to embedding requests only (not to ``/api/tags``), in this order: ``delay_s``,
the API key, ``fail``, then the model. Responses are HTTP/1.0 (one connection per request), so
stopping never waits for an idle keep-alive connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from codebase_mcp_search.adapters.hashing import HashingEmbedder

OLLAMA_MODEL = "nomic-embed-text:latest"
OPENAI_MODEL = "text-embedding-3-small"
EMBEDDING_PATHS = frozenset({"/api/embed", "/api/embeddings", "/v1/embeddings"})


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    payload: Any  # the parsed JSON body (None for a GET or a body that is not JSON)
    headers: dict[str, str]  # names lowercased

    @property
    def inputs(self) -> list[str]:
        """The texts of an embedding request (``input`` or the legacy ``prompt``)."""
        return _inputs(self.payload)


@dataclass
class EmbeddingServer:
    """The server's knobs and what it saw; see the module docstring."""

    # Models the server has (Ollama names carry their tag); others get a 404 JSON error.
    models: set[str] = field(default_factory=lambda: {OLLAMA_MODEL, OPENAI_MODEL})
    dimension: int = 64
    # Ollama older than 0.3.4: /api/embed answers the router's plain-text "404 page not found".
    no_embed_endpoint: bool = False
    # Seconds to wait before answering an embedding request (cut short when the server stops).
    delay_s: float = 0.0
    # When set, requests without "Authorization: Bearer <api_key>" get 401.
    api_key: str | None = None
    # The n-th embedding request (1-based) returns vectors one element too long.
    wrong_dimension_on: int | None = None
    # OpenAI: return the "data" items in reverse order (each keeps its index).
    reverse_data: bool = False

    requests: list[Recorded] = field(default_factory=list, init=False)
    max_concurrency: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._hashing = HashingEmbedder(self.dimension)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._failures: list[tuple[int, float | str | None]] = []
        self._active = 0
        self._embedding_requests = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- for tests ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The Ollama base URL (the server's root)."""
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI-compatible base URL (the API root)."""
        return self.url + "/v1"

    def fail(self, times: int, status: int = 500, retry_after: float | str | None = None) -> None:
        """Answer the next ``times`` embedding requests with ``status`` (and a Retry-After)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * times)

    def recover(self) -> None:
        """Drop the failures still queued: the next requests are answered again."""
        with self._lock:
            self._failures.clear()

    @property
    def embedding_requests(self) -> list[Recorded]:
        """The recorded requests to an embedding endpoint."""
        return [r for r in self.requests if r.path in EMBEDDING_PATHS]

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.embedding_server = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is None or self._thread is None:
            return
        self._stopping.set()  # wakes delayed handlers: server_close() joins them
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()

    # --- what the handler calls --------------------------------------------------------------

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    @contextmanager
    def _answering(self) -> Iterator[tuple[int, Callable[[], None]]]:
        """Counts concurrent embedding requests; yields this request's number (1-based) and
        the call that ends its count, made just before its answer is written (a client that
        has read an answer may send its next request at once: it is not counted beside it)."""
        with self._lock:
            self._embedding_requests += 1
            number = self._embedding_requests
            self._active += 1
            self.max_concurrency = max(self.max_concurrency, self._active)
        counted = [True]

        def answered() -> None:
            with self._lock:
                if counted[0]:
                    counted[0] = False
                    self._active -= 1

        try:
            yield number, answered
        finally:
            answered()

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        # In a handler thread: no event loop runs there.
        return [
            list(map(float, v)) for v in asyncio.run(self._hashing.embed_documents(texts)).vectors
        ]

    def _next_failure(self) -> tuple[int, float | str | None] | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None


@contextmanager
def embedding_server(**knobs: Any) -> Iterator[EmbeddingServer]:
    """A started ``EmbeddingServer`` (see its fields for ``knobs``), stopped on exit."""
    server = EmbeddingServer(**knobs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _inputs(payload: Any) -> list[str]:
    if not isinstance(payload, dict):
        return []
    if "prompt" in payload:
        return [payload["prompt"]]
    value = payload.get("input", [])
    return [value] if isinstance(value, str) else list(value)


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeEmbeddings/1.0"
    _answered: Callable[[], None] | None = None
    """Ends the count of the embedding request being answered (see ``_answering``)."""

    @property
    def state(self) -> EmbeddingServer:
        return self.server.embedding_server  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no access log on the test's stderr

    # --- routing -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record(None)
        if self.path == "/api/tags":
            models = [{"name": name, "model": name} for name in sorted(self.state.models)]
            self._json(200, {"models": models})
        else:
            self._text(404, "404 page not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        self._record(payload)
        if self.path not in EMBEDDING_PATHS or (
            self.path == "/api/embed" and self.state.no_embed_endpoint
        ):
            self._text(404, "404 page not found")  # what Ollama's router says
            return
        with self.state._answering() as (number, answered):
            self._answered = answered
            try:
                self._embed(payload, number)
            finally:
                self._answered = None

    def _record(self, payload: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.state._record(Recorded(self.command, self.path, payload, headers))

    # --- embedding requests ------------------------------------------------------------------

    def _embed(self, payload: Any, number: int) -> None:
        state = self.state
        openai = self.path.startswith("/v1/")
        if state.delay_s and state._stopping.wait(state.delay_s):
            return  # stopping: the client gave up long ago
        if state.api_key is not None:
            sent = self.headers.get("Authorization", "")
            if sent != f"Bearer {state.api_key}":
                # As some servers do: the key that was sent, echoed in the error.
                self._error(401, f"Incorrect API key provided: {sent.removeprefix('Bearer ')}")
                return
        failure = state._next_failure()
        if failure is not None:
            status, retry_after = failure
            headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
            self._error(status, f"injected failure {status}", headers)
            return
        if not isinstance(payload, dict) or not isinstance(payload.get("model"), str):
            self._error(400, "invalid request: a JSON body with a model is required")
            return
        model = payload["model"]
        if model not in state.models:
            if openai:
                self._error(404, f"The model `{model}` does not exist")
            else:
                self._error(404, f'model "{model}" not found, try pulling it first')
            return
        vectors = state._vectors(_inputs(payload))
        if number == state.wrong_dimension_on:
            vectors = [[*v, 0.5] for v in vectors]
        if openai:
            data = [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ]
            if state.reverse_data:
                data.reverse()
            self._json(200, {"object": "list", "data": data, "model": model})
        elif self.path == "/api/embeddings":
            self._json(200, {"embedding": vectors[0]})
        else:
            self._json(200, {"model": model, "embeddings": vectors})

    # --- responses ---------------------------------------------------------------------------

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        if self.path.startswith("/v1/"):
            body: dict[str, Any] = {"error": {"message": message, "type": "invalid_request_error"}}
        else:
            body = {"error": message}
        self._json(status, body, headers)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode(), "application/json", headers)

    def _text(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/plain; charset=utf-8")

    def _send(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        if self._answered is not None:
            self._answered()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except ConnectionError:
            pass  # the client timed out and went away
