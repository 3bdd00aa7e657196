"""Use-case services: indexing, search and tasks. They depend on ports only."""

from codebase_core.services.indexing import CancellationToken, IndexingService, ProgressCallback
from codebase_core.services.search import SearchService
from codebase_core.services.tasks import TaskService

__all__ = [
    "CancellationToken",
    "IndexingService",
    "ProgressCallback",
    "SearchService",
    "TaskService",
]
