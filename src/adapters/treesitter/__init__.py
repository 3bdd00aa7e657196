"""Source chunking with tree-sitter."""

from codebase_mcp_search.adapters.treesitter.chunker import AST_LANGUAGES, TreeSitterChunker

__all__ = ["AST_LANGUAGES", "TreeSitterChunker"]
