"""Token counting with tiktoken."""

from adapters.tokens.tiktoken_counter import TiktokenCounter

__all__ = ["TiktokenCounter"]
