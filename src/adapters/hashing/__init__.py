"""A deterministic, dependency-free feature-hashing embedder."""

from adapters.hashing.embedder import HashingEmbedder

__all__ = ["HashingEmbedder"]
