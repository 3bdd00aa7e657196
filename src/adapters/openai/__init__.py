"""Embeddings from any server speaking OpenAI's ``/embeddings`` API."""

from codebase_mcp_search.adapters.openai.embedder import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_INPUT_CHARS,
    DEFAULT_MODEL,
    OpenAICompatibleEmbedder,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_INPUT_CHARS",
    "DEFAULT_MODEL",
    "OpenAICompatibleEmbedder",
]
