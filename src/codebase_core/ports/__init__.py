"""Ports: the protocols the domain talks to. Adapters implement them; services depend on them.

Every I/O port is async; ``Chunker``, ``TokenCounter`` and ``IgnoreRules`` are synchronous (pure
CPU work; see ``chunking`` and ``files``).
A port's docstring states its contract, including which core errors it raises:

- ``store``: the chunk store by role (``RepositoryCatalog``, ``FileSnapshots``,
  ``ChunkWriter``, ``VectorWriter``, ``ChunkRetrieval``, ``EmbeddingCache``), composed as
  ``IndexStore``, ``SearchStore`` and ``ChunkStore``;
- ``embedding``: ``Embedder``;
- ``tasks``: ``TaskRepo``;
- ``jobs``: ``JobQueue``;
- ``files``: ``SourceTree``, ``IgnoreRules``, ``IgnoreMatcher``;
- ``chunking``: ``Chunker``, ``TokenCounter``, ``ChunkingPool``, ``ChunkingRun``.
"""

from codebase_mcp_search.core.ports.chunking import (
    Chunker,
    ChunkingPool,
    ChunkingRun,
    TokenCounter,
)
from codebase_mcp_search.core.ports.embedding import Embedder, embeds_inline
from codebase_mcp_search.core.ports.files import IgnoreMatcher, IgnoreRules, SourceTree
from codebase_mcp_search.core.ports.jobs import JobQueue
from codebase_mcp_search.core.ports.store import (
    ChunkRetrieval,
    ChunkStore,
    ChunkWriter,
    EmbeddingCache,
    FileSnapshots,
    IndexedFile,
    IndexStore,
    RepositoryCatalog,
    SearchStore,
    VectorWriter,
)
from codebase_mcp_search.core.ports.tasks import TaskRepo

__all__ = [
    "ChunkRetrieval",
    "ChunkStore",
    "ChunkWriter",
    "Chunker",
    "ChunkingPool",
    "ChunkingRun",
    "Embedder",
    "EmbeddingCache",
    "FileSnapshots",
    "IgnoreMatcher",
    "IgnoreRules",
    "IndexStore",
    "IndexedFile",
    "JobQueue",
    "RepositoryCatalog",
    "SearchStore",
    "SourceTree",
    "TaskRepo",
    "TokenCounter",
    "VectorWriter",
    "embeds_inline",
]
