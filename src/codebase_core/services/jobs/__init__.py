"""Background indexing jobs.

- ``service``: ``JobService``, the job tools' use cases over a ``JobQueue``;
- ``worker``: ``JobWorker``, claims jobs and runs them with a heartbeat, blocking and resuming;
- ``progress``: a run's reports turned into one growing percentage, a message and an ETA.
"""

from codebase_mcp_search.core.services.jobs.progress import JobProgressTracker
from codebase_mcp_search.core.services.jobs.service import JobService
from codebase_mcp_search.core.services.jobs.worker import JobRunner, JobWorker, WorkerConfig

__all__ = ["JobProgressTracker", "JobRunner", "JobService", "JobWorker", "WorkerConfig"]
