"""In-memory reference implementations of every port."""

from codebase_mcp_search.adapters.memory.chunk_store import InMemoryChunkStore
from codebase_mcp_search.adapters.memory.job_queue import InMemoryJobQueue
from codebase_mcp_search.adapters.memory.source_tree import InMemorySourceTree
from codebase_mcp_search.adapters.memory.task_repo import InMemoryTaskRepo
from codebase_mcp_search.adapters.memory.watching import InMemoryChangeSource, InMemoryWatchClaims

__all__ = [
    "InMemoryChangeSource",
    "InMemoryChunkStore",
    "InMemoryJobQueue",
    "InMemorySourceTree",
    "InMemoryTaskRepo",
    "InMemoryWatchClaims",
]
