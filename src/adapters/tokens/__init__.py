"""Token counting with tiktoken."""

from codebase_mcp_search.adapters.tokens.tiktoken_counter import TiktokenCounter

__all__ = ["TiktokenCounter"]
