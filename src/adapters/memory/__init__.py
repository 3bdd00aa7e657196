"""In-memory reference implementations of every port."""

from adapters.memory.chunk_store import InMemoryChunkStore
from adapters.memory.job_queue import InMemoryJobQueue
from adapters.memory.source_tree import InMemorySourceTree
from adapters.memory.task_repo import InMemoryTaskRepo

__all__ = ["InMemoryChunkStore", "InMemoryJobQueue", "InMemorySourceTree", "InMemoryTaskRepo"]
