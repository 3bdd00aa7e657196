"""Background indexing jobs.

- ``service``: ``JobService``, the job use cases over a ``JobQueue`` (start, run and wait,
  status, list, cancel);
- ``worker``: ``JobWorker``, claims jobs and runs them with a heartbeat, blocking and resuming.
"""

from codebase_mcp_search.core.services.jobs.service import JobService, JobWatcher
from codebase_mcp_search.core.services.jobs.worker import IndexingFor, JobWorker, WorkerConfig

__all__ = ["IndexingFor", "JobService", "JobWatcher", "JobWorker", "WorkerConfig"]
