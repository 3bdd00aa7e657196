"""A deterministic, dependency-free feature-hashing embedder."""

from codebase_mcp_search.adapters.hashing.embedder import HashingEmbedder

__all__ = ["HashingEmbedder"]
