"""RemoteEmbedder: batching, bounded concurrency, retries and truncation over httpx."""

from __future__ import annotations

import asyncio
import logging
import math
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import EmbedderUnavailable, ValidationFailed
from codebase_mcp_search.core.models import Embeddings

log = logging.getLogger("codebase_mcp.embedder")

# A Retry-After longer than this is not waited for: the run fails with the server's reason.
_MAX_RETRY_AFTER_S = 60.0
# Backoff between retries: doubling from BACKOFF_S, at most BACKOFF_MAX_S.
BACKOFF_S = 0.5
BACKOFF_MAX_S = 8.0


@dataclass(frozen=True, slots=True)
class HttpEmbeddingOptions:
    """How an HTTP embedder talks to its server (see docs/configuration.md);
    defaults from ``core.defaults``."""

    batch_size: int = defaults.EMBEDDING_BATCH_SIZE
    max_in_flight: int = defaults.EMBEDDING_CONCURRENCY
    timeout_s: float = defaults.EMBEDDING_TIMEOUT_S
    # Attempts after the first, for connection errors, timeouts, 429 and 5xx only.
    retries: int = defaults.EMBEDDING_RETRIES
    backoff_s: float = BACKOFF_S
    backoff_max_s: float = BACKOFF_MAX_S
    # Longer texts are cut to this many characters (and counted) before they are sent. None:
    # what the embedder's server kind takes (its ``DEFAULT_MAX_INPUT_CHARS``).
    max_input_chars: int | None = None

    def __post_init__(self) -> None:
        for field in ("batch_size", "max_in_flight", "max_input_chars"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise ValidationFailed(field, value, "must be at least 1")
        if self.retries < 0:
            raise ValidationFailed("retries", self.retries, "must be 0 or more")
        if not self.timeout_s > 0:
            raise ValidationFailed("timeout_s", self.timeout_s, "must be positive")


@dataclass(frozen=True, slots=True)
class ServerReply:
    """A response that was not retried: its status and its body (parsed JSON, or text)."""

    status: int
    body: Any

    @property
    def error_text(self) -> str:
        """The server's own explanation, as short text."""
        body = self.body
        if isinstance(body, dict):
            err = body.get("error", body)
            if isinstance(err, dict):
                err = err.get("message", err)
            body = err
        # Not shortened here: a secret must be redacted before the text is cut (see unavailable).
        return str(body).strip()


def redact_url(url: str) -> str:
    """``url`` without a password or user name (for messages and logs)."""
    return re.sub(r"//[^/@]*@", "//", url)


class RemoteEmbedder(ABC):
    """Shared behaviour of the HTTP embedders; a subclass speaks one server API.

    The dimension is learnt from the first response (``open`` asks for one) and every later
    vector is checked against it.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        model_name: str,
        options: HttpEmbeddingOptions,
        *,
        default_max_input_chars: int,
        secret: str | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValidationFailed("base_url", base_url, "must start with http:// or https://")
        if not model_name.strip():
            raise ValidationFailed("model", model_name, "must name an embedding model")
        self._client = client
        self.base_url = base_url.rstrip("/")
        self.model_name = model_name
        self.options = options
        self.max_input_chars = options.max_input_chars or default_max_input_chars
        self._secret = secret or None
        self._dimension: int | None = None
        self._in_flight = asyncio.Semaphore(options.max_in_flight)

    # --- what a subclass provides ------------------------------------------------------

    @property
    @abstractmethod
    def model(self) -> str:
        """The model's name as stored with vectors (``<server kind>/<model>``)."""

    @abstractmethod
    async def _embed_batch(self, texts: list[str], *, query: bool) -> Any:
        """The server's vectors for at most ``batch_size`` texts, unchecked (``_checked`` checks
        them); task prefixes are the subclass's business."""

    @abstractmethod
    def _fix(self) -> str:
        """What the user should check or run when the server or model cannot be used."""

    # --- the Embedder port -------------------------------------------------------------

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise EmbedderUnavailable(
                f"the dimension of {self.model} is not known yet: open() the embedder first"
            )
        return self._dimension

    async def open(self) -> None:
        """Ask the server for one vector: checks it answers, has the model, and learns the
        dimension. Raises ``EmbedderUnavailable``."""
        await self.embed_query("dimension probe")

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        cut, truncated = self._truncate(texts)
        if truncated:
            # Per batch, so debug: the indexing result counts them, and the CLI says so once.
            log.debug(
                "%d of %d texts exceed %d characters: %s embeds their beginning",
                truncated,
                len(texts),
                self.max_input_chars,
                self.model,
            )
        size = self.options.batch_size
        batches = [cut[i : i + size] for i in range(0, len(cut), size)]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._bounded(b, query=False)) for b in batches]
        except ExceptionGroup as failed:
            # The first failure says why; the other batches were cancelled with it.
            raise failed.exceptions[0] from None
        vectors = [v for t in tasks for v in t.result()]
        return Embeddings(vectors=vectors, truncated=truncated)

    async def embed_query(self, text: str) -> list[float]:
        cut, _ = self._truncate([text])
        return (await self._bounded(cut, query=True))[0]

    # --- shared machinery --------------------------------------------------------------

    def _truncate(self, texts: Sequence[str]) -> tuple[list[str], int]:
        limit = self.max_input_chars
        # Some servers refuse an empty input; a blank embeds as "nothing" just the same.
        out = [t[:limit] if t.strip() else " " for t in texts]
        return out, sum(1 for t in texts if len(t) > limit)

    async def _bounded(self, texts: list[str], *, query: bool) -> list[list[float]]:
        async with self._in_flight:
            vectors = await self._embed_batch(texts, query=query)
        return self._checked(vectors, len(texts))

    def _checked(self, vectors: Any, expected: int) -> list[list[float]]:
        if not isinstance(vectors, list) or len(vectors) != expected:
            got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
            raise self.unavailable(f"returned {got} vectors for {expected} texts")
        out: list[list[float]] = []
        for v in vectors:
            if not isinstance(v, list) or not v:
                raise self.unavailable("returned something that is not a vector")
            try:
                floats = [float(x) for x in v]
            except (TypeError, ValueError):
                raise self.unavailable("returned a vector holding something not a number") from None
            if not all(math.isfinite(x) for x in floats):
                raise self.unavailable("returned a vector with NaN or infinite values")
            if self._dimension is None:
                self._dimension = len(floats)
            elif len(floats) != self._dimension:
                raise self.unavailable(
                    f"returned a {len(floats)}-dimensional vector after {self._dimension}-"
                    "dimensional ones: is another model being served under the same name?"
                )
            out.append(floats)
        return out

    def unavailable(self, reason: str) -> EmbedderUnavailable:
        """``EmbedderUnavailable`` naming the server, the model, the reason and the fix."""
        message = (
            f"embedding server {redact_url(self.base_url)} (model {self.model_name}) "
            f"{self._redacted(reason)}: {self._fix()}"
        )
        return EmbedderUnavailable(message, url=redact_url(self.base_url), model=self.model_name)

    def _redacted(self, text: str) -> str:
        """``text`` without the secret, then cut to a readable length."""
        if self._secret:
            text = text.replace(self._secret, "***")
        return text if len(text) <= 400 else text[:397] + "..."

    async def post_json(
        self, path: str, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> ServerReply:
        """POST ``payload``; retries connection errors, timeouts, 429 and 5xx with exponential
        backoff and full jitter (or the server's Retry-After). Returns any other reply; raises
        ``EmbedderUnavailable`` when the retries are spent."""
        url = self.base_url + path
        attempts = self.options.retries + 1
        reason = ""
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                response = await self._client.post(
                    url, json=payload, headers=headers, timeout=self.options.timeout_s
                )
            except httpx.TimeoutException:
                reason = f"did not answer within {self.options.timeout_s:g} s"
            except httpx.TransportError as e:
                reason = f"is not reachable ({type(e).__name__}: {e})"
            except httpx.RequestError as e:  # redirects, undecodable bodies: not transient
                raise self.unavailable(f"failed ({type(e).__name__}: {e})") from None
            else:
                reply = ServerReply(response.status_code, _body(response))
                if response.status_code != 429 and response.status_code < 500:
                    return reply
                reason = f"answered HTTP {response.status_code}: {reply.error_text}"
                retry_after = _retry_after(response)
                if retry_after is not None and retry_after > _MAX_RETRY_AFTER_S:
                    raise self.unavailable(f"{reason} (and asks to retry in {retry_after:g} s)")
            if attempt + 1 < attempts:
                delay = self._delay(attempt, retry_after)
                log.info(
                    "%s %s; retry %d/%d in %.2f s",
                    redact_url(url),
                    self._redacted(reason),
                    attempt + 1,
                    attempts - 1,
                    delay,
                )
                await asyncio.sleep(delay)
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        raise self.unavailable(reason + tries)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER_S)
        ceiling = min(self.options.backoff_max_s, self.options.backoff_s * 2**attempt)
        return random.uniform(0.0, ceiling)  # full jitter: retries of many clients spread out


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
