"""Use-case services: indexing, search, tasks and jobs. They depend on ports only."""

from codebase_mcp_search.core.services.indexing import (
    CancellationToken,
    IndexingService,
    ProgressCallback,
    RunCounts,
)
from codebase_mcp_search.core.services.jobs import (
    JobProgressTracker,
    JobRunner,
    JobService,
    JobWorker,
    WorkerConfig,
)
from codebase_mcp_search.core.services.search import SearchService
from codebase_mcp_search.core.services.tasks import TaskService

__all__ = [
    "CancellationToken",
    "IndexingService",
    "JobProgressTracker",
    "JobRunner",
    "JobService",
    "JobWorker",
    "ProgressCallback",
    "RunCounts",
    "SearchService",
    "TaskService",
    "WorkerConfig",
]
