"""Use-case services: indexing, search, tasks and jobs. They depend on ports only."""

from codebase_mcp_search.core.services.indexing import (
    CancellationToken,
    IndexingService,
    ProgressCallback,
    RunCounts,
    RunProgress,
)
from codebase_mcp_search.core.services.jobs import (
    IndexingFor,
    JobService,
    JobWatcher,
    JobWorker,
    WorkerConfig,
    indexing,
    with_jobs,
)
from codebase_mcp_search.core.services.search import SearchService
from codebase_mcp_search.core.services.tasks import TaskService

__all__ = [
    "CancellationToken",
    "IndexingFor",
    "IndexingService",
    "JobService",
    "JobWatcher",
    "JobWorker",
    "ProgressCallback",
    "RunCounts",
    "RunProgress",
    "SearchService",
    "TaskService",
    "WorkerConfig",
    "indexing",
    "with_jobs",
]
