"""Worker processes that chunk files on several cores (the ``ChunkingPool`` port)."""

from codebase_mcp_search.adapters.workers.pool import ProcessChunkingPool

__all__ = ["ProcessChunkingPool"]
