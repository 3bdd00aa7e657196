"""A sentence-transformers model in this process (the ``local`` extra: ``pip install -e '.[local]'`` in a clone)."""

from codebase_mcp_search.adapters.local.embedder import (
    DEFAULT_MODEL,
    LocalEmbedder,
    local_extra_installed,
)

__all__ = ["DEFAULT_MODEL", "LocalEmbedder", "local_extra_installed"]
