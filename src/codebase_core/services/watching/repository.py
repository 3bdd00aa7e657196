"""One repository watched: its changes, gathered into bursts (``coalescing``), each queued as
one incremental index job on the job queue, as any interface's job is (listed, cancellable)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from codebase_mcp_search.core.errors import CoreError, DuplicateJob
from codebase_mcp_search.core.models import IndexRequest, JobStatus
from codebase_mcp_search.core.models.watching import WatchMode
from codebase_mcp_search.core.policies import IgnoreFiles, SkipPolicy
from codebase_mcp_search.core.ports.watching import ChangeSource, ChangeStream
from codebase_mcp_search.core.services.jobs import JobService
from codebase_mcp_search.core.services.watching.coalescing import (
    GIT_INDEX_LOCK,
    Burst,
    WatchConfig,
)

log = logging.getLogger("codebase_mcp")

IgnoresOf = Callable[[str], Awaitable[IgnoreFiles]]
"""The ignore files in force at a root (``.ignore``, ``.gitignore``, ``.git/info/exclude``)."""
ROOT_IGNORE_FILES = frozenset({".ignore", ".gitignore", ".git/info/exclude"})


class RepositoryWatch:
    """Watches one repository of one project until cancelled; ``jobs_queued`` counts the jobs
    it queued (one per burst; a burst that finds the repository's job still pending joins it)."""

    def __init__(
        self,
        project_id: str,
        root: str,
        *,
        source: ChangeSource,
        jobs: JobService,
        policy: SkipPolicy,
        ignores_of: IgnoresOf,
        config: WatchConfig,
    ) -> None:
        self.project_id = project_id
        self.root = root
        self._source = source
        self._jobs = jobs
        self._policy = policy
        self._ignores_of = ignores_of
        self._config = config
        self.mode: WatchMode | None = None
        self.why: str | None = None
        self.jobs_queued = 0

    async def run(self) -> None:
        """Watch until cancelled (or the root is gone: ``EOFError`` ends it). On start, one
        job catches up with what changed while nobody watched."""
        stream = await self._source.open(self.root)
        try:
            await self._queue(stream)
            # Shown as watched once the catch-up job is queued: a change from now on is seen.
            self.mode, self.why = stream.mode, stream.why
            await self._watch(stream)
        finally:
            await stream.close()

    async def _watch(self, stream: ChangeStream) -> None:
        loop = asyncio.get_running_loop()
        ignores = await self._ignores_of(self.root)
        burst = Burst(self._config)
        while True:
            wait = burst.due_in(loop.time())
            if wait == 0:
                busy = await self._source.exists(self.root, GIT_INDEX_LOCK)
                if not burst.held_by_git(busy, loop.time()):
                    burst.clear()
                    await self._queue(stream)
                    continue
                wait = self._config.quiet_s  # git is at work: its operation is one burst
            try:
                changes = await asyncio.wait_for(stream.next(), wait)
            except TimeoutError:
                changes = []
            if any(c.path in ROOT_IGNORE_FILES for c in changes):
                ignores = await self._ignores_of(self.root)
            burst.note(changes, loop.time(), self._policy, ignores)

    async def _queue(self, stream: ChangeStream) -> None:
        """Queue an incremental run of the repository. A job of it still pending will see
        every change so far: it is the run. One already running may have passed the changed
        files: the next is queued once it ends. What changed until the job is queued is
        covered by it (``drain``)."""
        request = IndexRequest(root=self.root)
        while True:
            try:
                job = await self._jobs.start(self.project_id, request)
            except DuplicateJob as e:
                try:
                    held = await self._jobs.status(e.details["job_id"])
                except CoreError:
                    held = None
                if held is not None and held.status is JobStatus.PENDING:
                    break
                await asyncio.sleep(self._config.retry_s)
                continue
            except CoreError as e:  # the database away: try again in a moment
                log.warning("watching %s: could not queue its index job: %s", self.root, e)
                await asyncio.sleep(self._config.recheck_s)
                continue
            self.jobs_queued += 1
            log.debug("watching %s: queued job %s", self.root, job.id)
            break
        stream.drain()
