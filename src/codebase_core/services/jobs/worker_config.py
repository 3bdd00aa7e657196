"""How a ``JobWorker`` paces itself: concurrency, leases, heartbeats, retries, housekeeping."""

from __future__ import annotations

from dataclasses import dataclass

from codebase_mcp_search.core import defaults


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    max_concurrent: int = defaults.MAX_CONCURRENT_JOBS
    lease_s: float = defaults.JOB_LEASE_S
    """A job whose worker has not renewed it for this long is taken over."""
    heartbeat_s: float = defaults.JOB_HEARTBEAT_S
    poll_s: float = 1.0
    """How often to look for new jobs when nothing wakes the worker."""
    retry_s: float = 1.0
    retry_max_s: float = 30.0
    """Backoff of a blocked job's retries: doubling from ``retry_s`` up to this."""
    reconnect_max_s: float = 5.0
    """While the database is away, how far apart (at most) a worker tries to record the
    job's state again: it notices the database is back this soon after."""
    cancel_grace_s: float = 0.5
    """After a cancellation the run stops at its next batch; past this it is interrupted
    (safe too: each file is written in one transaction, and writes under way complete)."""
    retention_days: float = defaults.JOB_RETENTION_DAYS
    """Finished jobs older than this are purged."""
    purge_every_s: float = 3600.0
    reap_every_s: float = 5.0
    """How often to look for jobs held by workers known to be dead (see ``is_dead``)."""

    def __post_init__(self) -> None:
        if self.max_concurrent < 1:
            raise ValueError("max_concurrent must be >= 1")
        if not 0 < self.heartbeat_s < self.lease_s:
            raise ValueError("heartbeat_s must be positive and shorter than lease_s")
