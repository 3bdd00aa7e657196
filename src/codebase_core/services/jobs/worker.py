"""JobWorker: claims jobs from a ``JobQueue`` and runs up to N of them at once, each as an
indexing run of its project's ``IndexingService`` (given by the ``indexing`` resolver the
composition root injects).

Each job it holds gets a heartbeat that renews the lease and records progress every
``heartbeat_s``; the heartbeat is also how a cancellation reaches the run (the queue marks
the job, the worker sees it at its next renewal). A run that the database or the embedder
fails goes ``blocked`` and is retried with backoff until it passes; a worker that dies simply
stops renewing, and once the lease expires any worker (this one restarted, or another
sharing the database) claims the job again: the indexing run is incremental, so it picks up
where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from codebase_mcp_search.core.errors import (
    Cancelled,
    CoreError,
    EmbedderUnavailable,
    JobLeaseLost,
    StoreUnavailable,
)
from codebase_mcp_search.core.models import (
    IndexResult,
    Job,
    JobKind,
    JobOutcome,
    JobStatus,
    VectorResult,
    steps_to,
    utcnow,
)
from codebase_mcp_search.core.ports import JobQueue
from codebase_mcp_search.core.services.indexing import CancellationToken, RunProgress
from codebase_mcp_search.core.services.jobs.housekeeping import purge_old, release_dead
from codebase_mcp_search.core.services.jobs.layers import IndexingFor, after_vectors, run_layer
from codebase_mcp_search.core.services.jobs.worker_config import WorkerConfig

log = logging.getLogger("codebase_mcp")

BLOCKERS = (EmbedderUnavailable, StoreUnavailable)
"""Failures of what a run depends on, not of the run: the job waits for them to pass."""


class _Held:
    """What the worker knows of one job it runs."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.token = CancellationToken()
        self.tracker = RunProgress.resuming(job)
        self.cancel_asked = asyncio.Event()
        self.lost = False
        self.task: asyncio.Task[None] | None = None


class JobWorker:
    """Runs queued jobs (see module doc); ``run`` until ``stop``."""

    def __init__(
        self,
        queue: JobQueue,
        indexing: IndexingFor,
        worker_id: str,
        config: WorkerConfig | None = None,
        clock: Callable[[], datetime] = utcnow,
        is_dead: Callable[[str], bool] | None = None,
    ) -> None:
        """``is_dead(worker_id)`` tells a worker known to be gone (a process of this machine
        that no longer runs): its jobs are resumed at once instead of when its lease ends."""
        self._is_dead = is_dead
        self._last_reap: float | None = None
        self._queue = queue
        self._indexing = indexing
        self.worker_id = worker_id
        self.config = config or WorkerConfig()
        self._clock = clock
        self._held: dict[str, _Held] = {}
        """The jobs this worker runs, by id."""
        self._wake = asyncio.Event()
        self._stopping = False
        self._last_purge: float | None = None

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.config.retention_days)

    @property
    def running(self) -> list[str]:
        """Ids of the jobs this worker runs now."""
        return list(self._held)

    def cancel_requested(self, job_id: str) -> None:
        """A job was just marked cancelled: stop it now if it runs here, without waiting for
        its next heartbeat to read the mark."""
        held = self._held.get(job_id)
        if held is not None and not held.cancel_asked.is_set():
            held.token.cancel()
            held.cancel_asked.set()

    def wake(self) -> None:
        """Look for jobs now (a job was just submitted, or a slot freed)."""
        self._wake.set()

    async def run(self) -> None:
        """Claim and run jobs until ``stop`` (or cancellation, which also stops the jobs)."""
        loop = asyncio.get_running_loop()
        try:
            while not self._stopping:
                self._wake.clear()
                await self._maybe_purge(loop.time())
                await self._maybe_reap(loop.time())
                await self._fill()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.config.poll_s)
        finally:
            await self._stop_jobs()

    async def stop(self) -> None:
        """Stop claiming; jobs under way are interrupted and handed back to the queue (a
        later worker resumes them)."""
        self._stopping = True
        self._wake.set()
        await self._stop_jobs()

    async def _stop_jobs(self) -> None:
        tasks = [h.task for h in self._held.values() if h.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        if tasks:
            with contextlib.suppress(CoreError):
                await self._queue.release(self.worker_id)

    async def _maybe_purge(self, now: float) -> None:
        if self._last_purge is not None and now - self._last_purge < self.config.purge_every_s:
            return
        self._last_purge = now
        await purge_old(self._queue, self._clock() - self.retention)

    async def _maybe_reap(self, now: float) -> None:
        """Hand back the jobs of workers known to be dead (a restarted server's former self)."""
        if self._is_dead is None:
            return
        if self._last_reap is not None and now - self._last_reap < self.config.reap_every_s:
            return
        self._last_reap = now
        await release_dead(self._queue, self.worker_id, self._is_dead)

    async def _fill(self) -> None:
        while len(self._held) < self.config.max_concurrent and not self._stopping:
            # At most one semantic job at a time: the model uses every core, and lexical jobs
            # (what makes a repository searchable) keep the other slots.
            embedding = any(h.job.kind is JobKind.SEMANTIC for h in self._held.values())
            kinds = (JobKind.LEXICAL,) if embedding else None
            try:
                job = await self._queue.claim(self.worker_id, self.config.lease_s, kinds)
            except CoreError as e:  # the database is away: try again at the next poll
                log.debug("claiming a job failed: %s", e)
                return
            if job is None:
                return
            mine = self._held.get(job.id)
            if mine is not None:
                # Its lease lapsed while the database was away and this worker took it over
                # from itself: the run under way goes on (the claim renewed the lease, and
                # made it ``running``).
                mine.job = job
                continue
            log.info(
                "job %s: %s layer of %s (attempt %d)",
                job.id,
                job.kind.value,
                job.repo_path,
                job.attempts,
            )
            held = _Held(job)
            self._held[job.id] = held
            held.task = asyncio.create_task(self._hold(held), name=f"job-{job.id}")
            held.task.add_done_callback(functools.partial(self._done, job.id))

    def _done(self, job_id: str, _task: asyncio.Task[None]) -> None:
        self._held.pop(job_id, None)
        self._wake.set()  # a slot is free

    async def _hold(self, held: _Held) -> None:
        beat = asyncio.create_task(self._heartbeat(held))
        try:
            await self._work(held)
        except JobLeaseLost:
            log.info("job %s was taken over by another worker", held.job.id)
        finally:
            beat.cancel()
            with contextlib.suppress(BaseException):
                await beat

    async def _heartbeat(self, held: _Held) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_s)
            try:
                job = await self._queue.renew(
                    held.job.id, self.worker_id, self.config.lease_s, held.tracker.snapshot()
                )
            except JobLeaseLost:
                held.lost = True
                held.token.cancel()
                held.cancel_asked.set()
                return
            except CoreError as e:  # the database is away: the lease may lapse meanwhile
                log.debug("job %s: renewing its lease failed: %s", held.job.id, e)
                continue
            except Exception:  # a heartbeat that died would leave the job to be taken over
                log.exception("job %s: renewing its lease failed unexpectedly", held.job.id)
                continue
            if job.cancel_requested and not held.cancel_asked.is_set():
                held.token.cancel()
                held.cancel_asked.set()

    async def _work(self, held: _Held) -> None:
        delay = self.config.retry_s
        while True:
            if held.cancel_asked.is_set():
                await self._end(held, JobStatus.CANCELLED)
                return
            # ``held.job``: the job as last recorded (by this worker, or by its claim of the
            # job back from itself, see ``_fill``).
            if held.job.status is JobStatus.BLOCKED:
                await self._finish(held, JobOutcome(status=JobStatus.RUNNING))
            try:
                result = await self._attempt(held)
            except Cancelled:
                if held.lost:
                    raise JobLeaseLost(f"job {held.job.id} was taken over") from None
                await self._end(held, JobStatus.CANCELLED)
                return
            except BLOCKERS as e:
                if held.lost:
                    raise JobLeaseLost(f"job {held.job.id} was taken over") from None
                log.warning(
                    "job %s blocked: %s; retrying in %.0f s", held.job.id, e.detailed, delay
                )
                await self._block(held, e)
                if held.cancel_asked.is_set():
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(held.cancel_asked.wait(), delay)
                delay = min(delay * 2, self.config.retry_max_s)
                continue
            except CoreError as e:
                await self._end(held, JobStatus.FAILED, error=e)
                return
            except Exception as e:
                log.exception("job %s failed unexpectedly", held.job.id)
                await self._end(held, JobStatus.FAILED, error=CoreError(f"{type(e).__name__}: {e}"))
                return
            await self._finish(
                held,
                JobOutcome(
                    status=JobStatus.COMPLETED,
                    result=held.tracker.job_result(result),
                    progress=held.tracker.snapshot().model_copy(
                        update={"percentage": 100, "message": "Completed", "eta_seconds": None}
                    ),
                ),
            )
            log.info("job %s completed", held.job.id)
            if held.job.kind is JobKind.SEMANTIC:
                await self._next_vectors(held.job)
            return

    async def _attempt(self, held: _Held) -> IndexResult | VectorResult:
        """One indexing run; past the grace after a cancellation it is interrupted."""
        run = asyncio.ensure_future(
            run_layer(self._indexing, self._queue, held.job, held.tracker, held.token, self._clock)
        )
        asked = asyncio.ensure_future(held.cancel_asked.wait())
        try:
            await asyncio.wait({run, asked}, return_when=asyncio.FIRST_COMPLETED)
            if not run.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(run), self.config.cancel_grace_s)
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
                raise Cancelled("indexing was interrupted; files written so far are consistent")
            return run.result()
        finally:
            asked.cancel()
            if not run.done():  # this worker itself is being stopped
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run

    async def _next_vectors(self, job: Job) -> None:
        """Queue the semantic job that follows ``job`` if chunks still wait (best effort: a
        lexical run's own job queues one too, and so does the next run of any)."""
        try:
            queued = await after_vectors(self._indexing, self._queue, job, self._clock)
        except CoreError as e:
            log.debug("job %s: looking for vectors still missing failed: %s", job.id, e)
            return
        if queued is not None:
            self.wake()

    async def _block(self, held: _Held, error: CoreError) -> None:
        """Record the job as blocked (not if a cancellation comes first).

        The database is often what is away: then it is tried again (``reconnect_max_s``
        apart at most, each try starting the embedded server again if it died) until it
        lands, and only then is the run retried. A job left ``running`` meanwhile would read
        as stalled, and a run retried blind would only fail again."""
        outcome = JobOutcome(
            status=JobStatus.BLOCKED,
            error_message=error.message,
            error_type=error.code,
            progress=held.tracker.snapshot().model_copy(
                update={"message": f"Blocked: {error.message}", "eta_seconds": None}
            ),
        )
        wait = self.config.retry_s
        while not held.cancel_asked.is_set():
            try:
                held.job = await self._queue.finish(held.job.id, self.worker_id, outcome)
                return
            except StoreUnavailable as e:
                log.debug("job %s: recording it blocked failed: %s", held.job.id, e)
            except JobLeaseLost:
                raise
            except CoreError as e:  # not the database being away: retrying will not help
                log.warning("job %s: recording it blocked failed: %s", held.job.id, e)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(held.cancel_asked.wait(), wait)
            wait = min(wait * 2, self.config.reconnect_max_s)

    async def _end(
        self,
        held: _Held,
        status: JobStatus,
        *,
        error: CoreError | None = None,
    ) -> None:
        snapshot = held.tracker.snapshot()
        message = "Cancelled" if status is JobStatus.CANCELLED else f"Failed: {error}"
        steps = steps_to(held.job.status, status)
        for step in steps:
            await self._finish(
                held,
                JobOutcome(
                    status=step,
                    error_message=error.message if error is not None and step is status else None,
                    error_type=error.code if error is not None and step is status else None,
                    progress=snapshot.model_copy(update={"message": message, "eta_seconds": None}),
                ),
            )
        log.info("job %s %s", held.job.id, status.value)

    async def _finish(self, held: _Held, outcome: JobOutcome) -> None:
        """``queue.finish``, retried while the database is away (the outcome must land)."""
        delay = self.config.retry_s
        while True:
            try:
                held.job = await self._queue.finish(held.job.id, self.worker_id, outcome)
                return
            except StoreUnavailable as e:
                log.warning("job %s: recording %s failed: %s", held.job.id, outcome.status, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.config.reconnect_max_s)
