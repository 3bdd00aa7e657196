"""OllamaEmbedder: embeddings from an Ollama server over its HTTP API (httpx)."""

from __future__ import annotations

import logging
from typing import Any

import httpx

from codebase_mcp_search.adapters.remote_embedding import (
    HttpEmbeddingOptions,
    RemoteEmbedder,
    redact_url,
)
from codebase_mcp_search.core import defaults

log = logging.getLogger("codebase_mcp.embedder")

DEFAULT_BASE_URL = defaults.OLLAMA_BASE_URL
DEFAULT_MODEL = defaults.OLLAMA_MODEL
# nomic-embed-text takes 2,048 tokens in Ollama's default context: about 6,000 characters of
# code. Ollama also truncates itself ("truncate": true).
DEFAULT_MAX_INPUT_CHARS = 6_000
UNREACHABLE = "is not reachable"
"""In ``has_model``'s reason when nothing answered (``auto`` then takes the next embedder
without a word: no Ollama running is the ordinary case)."""

# Task prefixes the models' cards ask for: (document, query).
_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_document: ", "search_query: "),
    "mxbai-embed-large": ("", "Represent this sentence for searching relevant passages: "),
    "snowflake-arctic-embed": ("", "Represent this sentence for searching relevant passages: "),
    "snowflake-arctic-embed2": ("", "query: "),
}


def tagged(model: str) -> str:
    """Ollama's full name of a model: ``nomic-embed-text`` is ``nomic-embed-text:latest``."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def _family(model: str) -> str:
    return model.rsplit("/", 1)[-1].split(":", 1)[0]


class OllamaEmbedder(RemoteEmbedder):
    """Ollama's ``/api/embed`` (batched), or the legacy ``/api/embeddings`` on older servers."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str = DEFAULT_BASE_URL,
        model: str = DEFAULT_MODEL,
        options: HttpEmbeddingOptions | None = None,
    ) -> None:
        super().__init__(
            client,
            base_url,
            tagged(model),
            options or HttpEmbeddingOptions(),
            default_max_input_chars=DEFAULT_MAX_INPUT_CHARS,
        )
        self._pull_name = model
        self._document_prefix, self._query_prefix = _PREFIXES.get(_family(model), ("", ""))
        self._legacy = False

    @property
    def model(self) -> str:
        return f"ollama/{self.model_name}"

    def _fix(self) -> str:
        return (
            f"start Ollama ('ollama serve'), run 'ollama pull {self._pull_name}', and check "
            "OLLAMA_BASE_URL / OLLAMA_EMBEDDING_MODEL"
        )

    async def has_model(self, timeout_s: float = defaults.PROBE_TIMEOUT_S) -> tuple[bool, str]:
        """Whether the server answers ``/api/tags`` quickly and lists the model, and why not."""
        url = redact_url(self.base_url)
        try:
            response = await self._client.get(self.base_url + "/api/tags", timeout=timeout_s)
        except httpx.RequestError as e:
            return False, f"Ollama at {url} {UNREACHABLE} ({type(e).__name__})"
        if response.status_code != 200:
            return False, f"Ollama at {url} answered HTTP {response.status_code} to /api/tags"
        try:
            names = {m.get("name") for m in response.json().get("models", [])}
        except (ValueError, AttributeError, TypeError):
            return False, f"{url} does not answer like Ollama (/api/tags)"
        if self.model_name not in names:
            return False, f"Ollama at {url} does not have {self.model_name}"
        return True, f"Ollama at {url} has {self.model_name}"

    async def _embed_batch(self, texts: list[str], *, query: bool) -> Any:
        prefix = self._query_prefix if query else self._document_prefix
        inputs = [prefix + t for t in texts]
        if not self._legacy:
            reply = await self.post_json(
                "/api/embed", {"model": self.model_name, "input": inputs, "truncate": True}
            )
            if reply.status == 404 and not isinstance(reply.body, dict):
                # "404 page not found" from the router, not a JSON error about the model: a
                # server older than /api/embed (Ollama < 0.3.4).
                log.warning(
                    "%s has no /api/embed: using the legacy /api/embeddings, one text per request",
                    redact_url(self.base_url),
                )
                self._legacy = True
            else:
                self._raise_for(reply.status, reply.error_text)
                return _field(reply.body, "embeddings", self)
        return [await self._embed_legacy(text) for text in inputs]

    async def _embed_legacy(self, text: str) -> list[float]:
        reply = await self.post_json("/api/embeddings", {"model": self.model_name, "prompt": text})
        if reply.status == 404 and not isinstance(reply.body, dict):
            raise self.unavailable(
                "has neither /api/embed nor /api/embeddings: is it an Ollama server, and is "
                "OLLAMA_BASE_URL its root (no /api suffix)?"
            )
        self._raise_for(reply.status, reply.error_text)
        vector: list[float] = _field(reply.body, "embedding", self)
        return vector

    def _raise_for(self, status: int, error: str) -> None:
        if status == 200:
            return
        if status == 404:
            raise self.unavailable(f"does not have the model ({error})")
        raise self.unavailable(f"refused the request with HTTP {status}: {error}")


def _field(body: Any, name: str, embedder: OllamaEmbedder) -> Any:
    if not isinstance(body, dict) or name not in body:
        raise embedder.unavailable(f"answered without {name!r}: is this an Ollama server?")
    return body[name]
