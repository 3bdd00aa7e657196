"""Repository files on the local filesystem, and gitignore-syntax matching (pathspec)."""

from codebase_mcp_search.adapters.filesystem.ignore_rules import PathspecIgnoreRules
from codebase_mcp_search.adapters.filesystem.source_tree import LocalSourceTree

__all__ = ["LocalSourceTree", "PathspecIgnoreRules"]
