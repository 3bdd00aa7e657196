"""Indexing: a repository's index brought up to date with its files, incrementally.

- ``service``: ``IndexingService``, the use case, and ``IndexRun``, one call of it;
- ``decisions``: what to re-chunk and delete, the model rule, the run's status (pure);
- ``pipeline``: batches read, chunked, embedded and written with the stages overlapping;
- ``speculative``: chunking of the first scanned files while the indexing lock is taken;
- ``embedding``: vectors attached from the embedding cache, or embedded;
- ``progress``: the progress callback, cancellation token and live counts a caller hands a
  run, and ``RunProgress``, the one percentage scale of a run.
"""

from codebase_mcp_search.core.services.indexing.progress import (
    CancellationToken,
    ProgressCallback,
    RunCounts,
    RunProgress,
)
from codebase_mcp_search.core.services.indexing.service import IndexingService, IndexRun

__all__ = [
    "CancellationToken",
    "IndexRun",
    "IndexingService",
    "ProgressCallback",
    "RunCounts",
    "RunProgress",
]
