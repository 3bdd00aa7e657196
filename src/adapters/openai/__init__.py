"""Embeddings from any server speaking OpenAI's ``/embeddings`` API."""

from adapters.openai.embedder import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenAICompatibleEmbedder

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAICompatibleEmbedder"]
