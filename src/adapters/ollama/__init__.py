"""Ollama embeddings over HTTP."""

from codebase_mcp_search.adapters.ollama.embedder import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_INPUT_CHARS,
    DEFAULT_MODEL,
    UNREACHABLE,
    OllamaEmbedder,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_INPUT_CHARS",
    "DEFAULT_MODEL",
    "UNREACHABLE",
    "OllamaEmbedder",
]
