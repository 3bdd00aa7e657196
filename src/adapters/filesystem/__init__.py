"""Repository files on the local filesystem, and gitignore-syntax matching (pathspec)."""

from codebase_mcp_search.adapters.filesystem.git_head import GitHead, read_head
from codebase_mcp_search.adapters.filesystem.ignore_rules import PathspecIgnoreRules
from codebase_mcp_search.adapters.filesystem.source_tree import LocalSourceTree
from codebase_mcp_search.adapters.filesystem.watch_support import network_mount, root_ignore_files

__all__ = [
    "GitHead",
    "LocalSourceTree",
    "PathspecIgnoreRules",
    "network_mount",
    "read_head",
    "root_ignore_files",
]
