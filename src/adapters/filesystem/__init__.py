"""Repository files on the local filesystem."""

from codebase_mcp_search.adapters.filesystem.source_tree import LocalSourceTree

__all__ = ["LocalSourceTree"]
