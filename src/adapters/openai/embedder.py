"""OpenAICompatibleEmbedder: ``POST {base_url}/embeddings`` as OpenAI, vLLM, LM Studio,
llama.cpp's server and text-embeddings-inference serve it (httpx)."""

from __future__ import annotations

from typing import Any

import httpx

from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions, RemoteEmbedder
from codebase_mcp_search.core import defaults

DEFAULT_BASE_URL = defaults.OPENAI_BASE_URL
DEFAULT_MODEL = defaults.OPENAI_MODEL
# OpenAI's models take 8,191 tokens; 24,000 characters of code stay below that. Servers of
# smaller models need CODEBASE_MCP_EMBEDDING_MAX_CHARS.
DEFAULT_MAX_INPUT_CHARS = 24_000


class OpenAICompatibleEmbedder(RemoteEmbedder):
    """The OpenAI embeddings API; the API key is sent as a bearer token and never shown."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str = DEFAULT_BASE_URL,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        options: HttpEmbeddingOptions | None = None,
    ) -> None:
        super().__init__(
            client,
            base_url,
            model,
            options or HttpEmbeddingOptions(),
            default_max_input_chars=DEFAULT_MAX_INPUT_CHARS,
            secret=api_key,
        )
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(base_url={self.base_url!r}, model={self.model_name!r})"

    @property
    def model(self) -> str:
        return f"openai/{self.model_name}"

    def _fix(self) -> str:
        return (
            "check CODEBASE_MCP_OPENAI_BASE_URL (the API root, e.g. http://localhost:8000/v1), "
            "CODEBASE_MCP_OPENAI_EMBEDDING_MODEL and CODEBASE_MCP_OPENAI_API_KEY, and that the "
            "server is running and serves that model"
        )

    async def _embed_batch(self, texts: list[str], *, query: bool) -> Any:
        reply = await self.post_json(
            "/embeddings",
            {"model": self.model_name, "input": texts, "encoding_format": "float"},
            headers=self._headers,
        )
        if reply.status in (401, 403):
            raise self.unavailable(f"refused the API key (HTTP {reply.status}: {reply.error_text})")
        if reply.status == 404:
            raise self.unavailable(f"has no such model or endpoint (HTTP 404: {reply.error_text})")
        if reply.status != 200:
            raise self.unavailable(
                f"refused the request with HTTP {reply.status}: {reply.error_text}"
            )
        return _vectors(reply.body, self)


def _vectors(body: Any, embedder: OpenAICompatibleEmbedder) -> Any:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise embedder.unavailable("answered without a 'data' list: is this an embeddings API?")
    try:
        # Items carry their input's index; servers need not return them in order.
        ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
        return [item["embedding"] for item in ordered]
    except (AttributeError, KeyError, TypeError, ValueError):
        raise embedder.unavailable("answered with malformed 'data' items") from None
