"""A sentence-transformers model in this process (``pip install 'codebase-mcp[local]'``)."""

from adapters.local.embedder import DEFAULT_MODEL, LocalEmbedder, local_extra_installed

__all__ = ["DEFAULT_MODEL", "LocalEmbedder", "local_extra_installed"]
