"""Source chunking with tree-sitter."""

from adapters.treesitter.chunker import AST_LANGUAGES, TreeSitterChunker

__all__ = ["AST_LANGUAGES", "TreeSitterChunker"]
