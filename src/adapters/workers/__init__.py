"""Where chunking runs (the ``ChunkingPool`` port): a thread, or worker processes on several
cores."""

from codebase_mcp_search.adapters.workers.pool import ProcessChunkingPool
from codebase_mcp_search.adapters.workers.threads import ThreadChunkingPool

__all__ = ["ProcessChunkingPool", "ThreadChunkingPool"]
