"""JobWorker over the in-memory queue: limits, cancellation, blocking, hand-over."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from codebase_mcp_search.adapters.memory import InMemoryJobQueue
from codebase_mcp_search.core.errors import EmbedderUnavailable, StoreUnavailable, ValidationFailed
from codebase_mcp_search.core.models import IndexRequest, IndexResult, Job, JobStatus
from codebase_mcp_search.core.services import (
    CancellationToken,
    IndexingFor,
    JobService,
    JobWorker,
    ProgressCallback,
    RunCounts,
    RunProgress,
    WorkerConfig,
)
from tests.factories import index_result

FAST = WorkerConfig(
    max_concurrent=2,
    lease_s=2.0,
    heartbeat_s=0.05,
    poll_s=0.05,
    retry_s=0.05,
    retry_max_s=0.1,
    cancel_grace_s=0.3,
)


Run = Callable[[IndexRequest, RunProgress, CancellationToken], Awaitable[IndexResult]]
"""A test's indexing run: the request of the job, the worker's tracker and token."""


class _Indexing:
    """Every project's indexing service, as the worker uses it: its run is the test's."""

    def __init__(self, run: Run) -> None:
        self._run = run

    async def index(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> IndexResult:
        assert isinstance(progress, RunProgress) and counts is progress.counts
        assert cancel is not None
        return await self._run(request, progress, cancel)


def indexing(run: Run) -> IndexingFor:
    """The project -> indexing service resolver the container would inject."""
    service = _Indexing(run)

    async def resolve(project_id: str) -> _Indexing:
        return service

    return resolve  # type: ignore[return-value]


def _result(request: IndexRequest) -> IndexResult:
    return index_result(request.name or request.root)


async def quick(
    request: IndexRequest, tracker: RunProgress, token: CancellationToken
) -> IndexResult:
    """A run that completes at once."""
    return _result(request)


def stuck(started: asyncio.Event) -> Run:
    """A run that says it started, then never ends by itself."""

    async def run(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return run


@asynccontextmanager
async def running(worker: JobWorker) -> AsyncIterator[JobWorker]:
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        await worker.stop()
        await asyncio.wait_for(task, 5)  # run() returns once stopped


async def until(check: Callable[[], object], within: float = 5.0) -> None:
    """Wait until ``check()`` (a value or an awaitable) is true."""
    async with asyncio.timeout(within):
        while True:
            outcome = check()
            if inspect.isawaitable(outcome):
                outcome = await outcome
            if outcome:
                return
            await asyncio.sleep(0.01)


async def status_of(queue: InMemoryJobQueue, job_id: str) -> JobStatus:
    return (await queue.get(job_id)).status


async def _start(service: JobService, n: int) -> Job:
    return await service.start("p", IndexRequest(root=f"/r{n}", name=f"r{n}"))


async def test_runs_a_job_to_completion_with_its_result() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        tracker.counts.files_scanned = 4
        tracker("scanning", 4, 4)
        return _result(request)

    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    done = await queue.get(job.id)
    assert done.result == _result(done.request())
    assert done.progress_percentage == 100 and done.progress_message == "Completed"
    assert done.files_scanned == 4
    assert done.started_at is not None and done.completed_at is not None


def _is(queue: InMemoryJobQueue, job_id: str, status: JobStatus) -> Callable[[], object]:
    async def check() -> bool:
        return (await queue.get(job_id)).status is status

    return check


async def test_at_most_max_concurrent_jobs_run_and_the_rest_wait() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    release = asyncio.Event()
    active = 0
    most = 0

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await release.wait()
        active -= 1
        return _result(request)

    jobs = [await _start(service, n) for n in range(5)]
    async with running(JobWorker(queue, indexing(runner), "w", FAST)) as worker:
        await until(lambda: len(worker.running) == 2)
        await asyncio.sleep(0.2)
        statuses = [await status_of(queue, j.id) for j in jobs]
        assert statuses.count(JobStatus.RUNNING) == 2
        assert statuses.count(JobStatus.PENDING) == 3
        release.set()
        for job in jobs:
            await until(_is(queue, job.id, JobStatus.COMPLETED))
    assert most == 2


@pytest.mark.parametrize("honours_token", [True, False])
async def test_cancel_reaches_a_running_job(honours_token: bool) -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    started = asyncio.Event()

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        started.set()
        while True:  # a run that checks its token between batches, or one stuck in a batch
            await asyncio.sleep(0.01)
            if honours_token:
                token.raise_if_cancelled()

    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        await asyncio.wait_for(started.wait(), 5)
        asked = await service.cancel(job.id)
        assert asked.status is JobStatus.RUNNING and asked.cancel_requested
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await until(_is(queue, job.id, JobStatus.CANCELLED))
        assert loop.time() - t0 < 2.0
    ended = await queue.get(job.id)
    assert ended.cancelled_at is not None and ended.progress_message == "Cancelled"


@pytest.mark.parametrize("blocker", [EmbedderUnavailable("model gone"), StoreUnavailable("db")])
async def test_a_blocked_job_resumes_by_itself(blocker: Exception) -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    attempts = 0
    seen: list[JobStatus] = []

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise blocker
        return _result(request)

    original_finish = queue.finish

    async def spy(job_id: str, worker_id: str, outcome):  # type: ignore[no-untyped-def]
        seen.append(outcome.status)
        return await original_finish(job_id, worker_id, outcome)

    queue.finish = spy  # type: ignore[method-assign]
    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    assert seen == [
        JobStatus.BLOCKED,
        JobStatus.RUNNING,
        JobStatus.BLOCKED,
        JobStatus.RUNNING,
        JobStatus.COMPLETED,
    ]
    assert attempts == 3


async def test_a_blocked_job_can_be_cancelled() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        raise EmbedderUnavailable("the embedding server is down")

    job = await _start(service, 1)
    slow = WorkerConfig(heartbeat_s=0.05, lease_s=2, poll_s=0.05, retry_s=30, retry_max_s=30)
    async with running(JobWorker(queue, indexing(runner), "w", slow)):
        await until(_is(queue, job.id, JobStatus.BLOCKED))
        blocked = await queue.get(job.id)
        assert blocked.error_type == "EMBEDDER_UNAVAILABLE"
        assert "down" in (blocked.error_message or "")
        assert (await service.cancel(job.id)).cancel_requested
        await until(_is(queue, job.id, JobStatus.CANCELLED), 3)


async def test_a_failing_run_fails_the_job_with_its_code() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        raise ValidationFailed("repo_path", request.root, "does not exist")

    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        await until(_is(queue, job.id, JobStatus.FAILED))
    failed = await queue.get(job.id)
    assert failed.error_type == "VALIDATION_ERROR"
    assert "does not exist" in (failed.error_message or "")


async def test_a_stopped_worker_hands_its_jobs_to_the_next() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    started = asyncio.Event()

    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(stuck(started)), "first", FAST)):
        await asyncio.wait_for(started.wait(), 5)
    held = await queue.get(job.id)
    assert held.status is JobStatus.RUNNING and held.lease_expires_at is None

    async with running(JobWorker(queue, indexing(quick), "second", FAST)):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    done = await queue.get(job.id)
    assert done.worker_id == "second" and done.attempts == 2


async def test_old_finished_jobs_are_purged() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    job = await _start(service, 1)
    await service.cancel(job.id)

    async def never(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        raise AssertionError("no job to run")

    keep = WorkerConfig(heartbeat_s=0.05, poll_s=0.05, retention_days=7)
    async with running(JobWorker(queue, indexing(never), "w", keep)):
        await asyncio.sleep(0.1)
    assert (await queue.get(job.id)).status is JobStatus.CANCELLED
    gone = WorkerConfig(heartbeat_s=0.05, poll_s=0.05, retention_days=0)
    async with running(JobWorker(queue, indexing(never), "w", gone)):
        await until(lambda: _missing(queue, job.id))


async def _missing(queue: InMemoryJobQueue, job_id: str) -> bool:
    return (await queue.list()).total_count == 0


async def test_jobs_of_a_worker_known_dead_resume_at_once() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    job = await _start(service, 1)
    await queue.claim("gone", 3600)  # a lease that would keep it for an hour

    worker = JobWorker(queue, indexing(quick), "new", FAST, is_dead=lambda wid: wid == "gone")
    async with running(worker):
        await until(_is(queue, job.id, JobStatus.COMPLETED), 3)
    assert (await queue.get(job.id)).worker_id == "new"

    other = await _start(service, 2)
    await queue.claim("alive", 3600)
    async with running(JobWorker(queue, indexing(quick), "new", FAST, is_dead=lambda wid: False)):
        await asyncio.sleep(0.3)
    assert (await queue.get(other.id)).worker_id == "alive"  # its lease holds


def test_gone_from_this_machine() -> None:
    import os
    import socket
    import subprocess
    import sys

    from codebase_mcp_search.entrypoints.worker import gone_from_this_machine, new_worker_id

    host = socket.gethostname()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert gone_from_this_machine(f"{host}:{proc.pid}:abc123")
    assert not gone_from_this_machine(new_worker_id())  # this process
    assert not gone_from_this_machine(f"{host}:{os.getppid()}:abc123")  # alive
    assert not gone_from_this_machine(f"elsewhere.example:{proc.pid}:abc123")
    assert not gone_from_this_machine("garbage")


async def test_a_local_cancellation_needs_no_heartbeat() -> None:
    queue = InMemoryJobQueue()
    service = JobService(queue)
    started = asyncio.Event()

    job = await _start(service, 1)
    slow_beat = WorkerConfig(heartbeat_s=30, lease_s=60, poll_s=0.05, cancel_grace_s=0.1)
    worker = JobWorker(queue, indexing(stuck(started)), "w", slow_beat)
    service.attach(worker)  # a worker of this process hears of the cancel at once
    async with running(worker):
        await asyncio.wait_for(started.wait(), 5)
        await service.cancel(job.id)
        await until(_is(queue, job.id, JobStatus.CANCELLED), 2)
