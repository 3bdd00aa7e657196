"""Worker processes that chunk files on several cores (the ``ChunkingPool`` port)."""

from adapters.workers.pool import ProcessChunkingPool

__all__ = ["ProcessChunkingPool"]
