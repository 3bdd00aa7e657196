"""A worker's housekeeping of the queue: finished jobs purged after their retention, and the
jobs of workers known to be dead handed back (a restarted server's former self), so they
resume at once rather than when their lease ends. Both are best effort: a database away now
is tried again at the next round."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from codebase_mcp_search.core.errors import CoreError
from codebase_mcp_search.core.models import JobStatus
from codebase_mcp_search.core.ports import JobQueue

log = logging.getLogger("codebase_mcp")


async def purge_old(queue: JobQueue, before: datetime) -> None:
    """Delete the jobs that ended before ``before``."""
    try:
        purged = await queue.purge(before)
    except CoreError as e:
        log.debug("purging old jobs failed: %s", e)
        return
    if purged:
        log.info("purged %d jobs that ended before %s", purged, before.isoformat())


async def release_dead(queue: JobQueue, worker_id: str, is_dead: Callable[[str], bool]) -> None:
    """Hand back the running and blocked jobs of other workers that ``is_dead`` says are gone."""
    dead: set[str] = set()
    try:
        for status in (JobStatus.RUNNING, JobStatus.BLOCKED):
            page = await queue.list(status=status, limit=100)
            dead.update(
                j.worker_id
                for j in page.jobs
                if j.worker_id and j.worker_id != worker_id and is_dead(j.worker_id)
            )
        for other in dead:
            released = await queue.release(other)
            log.info("resuming %d jobs of worker %s, which is gone", released, other)
    except CoreError as e:
        log.debug("looking for jobs of dead workers failed: %s", e)
