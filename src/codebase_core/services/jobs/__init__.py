"""Background indexing jobs.

- ``service``: ``JobService``, the job use cases over a ``JobQueue`` (start, run and wait,
  status, list, cancel);
- ``worker``: ``JobWorker``, claims jobs and runs them with a heartbeat, blocking and resuming;
- ``worker_config``: ``WorkerConfig``, its pace (concurrency, leases, retries);
- ``layers``: what a job of each kind runs, and the semantic job that follows;
- ``housekeeping``: old jobs purged, dead workers' jobs handed back;
- ``layers_state``: where a project's layers stand, from its repositories and active jobs.
"""

from codebase_mcp_search.core.services.jobs.layers import IndexingFor
from codebase_mcp_search.core.services.jobs.layers_state import indexing, with_jobs
from codebase_mcp_search.core.services.jobs.service import JobService, JobWatcher
from codebase_mcp_search.core.services.jobs.worker import JobWorker
from codebase_mcp_search.core.services.jobs.worker_config import WorkerConfig

__all__ = [
    "IndexingFor",
    "JobService",
    "JobWatcher",
    "JobWorker",
    "WorkerConfig",
    "indexing",
    "with_jobs",
]
