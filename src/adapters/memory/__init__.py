"""In-memory reference implementations of every port.

Each name is imported from its module when first asked for (the chunk store needs numpy,
which a process on Postgres never loads for it)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codebase_mcp_search.adapters.memory.chunk_store import InMemoryChunkStore
    from codebase_mcp_search.adapters.memory.job_queue import InMemoryJobQueue
    from codebase_mcp_search.adapters.memory.source_tree import InMemorySourceTree
    from codebase_mcp_search.adapters.memory.task_repo import InMemoryTaskRepo
    from codebase_mcp_search.adapters.memory.watching import (
        InMemoryChangeSource,
        InMemoryWatchClaims,
    )

__all__ = [
    "InMemoryChangeSource",
    "InMemoryChunkStore",
    "InMemoryJobQueue",
    "InMemorySourceTree",
    "InMemoryTaskRepo",
    "InMemoryWatchClaims",
]

_MODULES = {
    "InMemoryChunkStore": "chunk_store",
    "InMemoryJobQueue": "job_queue",
    "InMemorySourceTree": "source_tree",
    "InMemoryTaskRepo": "task_repo",
    "InMemoryChangeSource": "watching",
    "InMemoryWatchClaims": "watching",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    globals()[name] = value
    return value
