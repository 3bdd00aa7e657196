"""Jobs through a database outage, over the in-memory queue made to fail like a database that
is away: the job shows ``blocked`` once the database is back, then completes; a worker whose
lease lapsed meanwhile does not run the job twice; a caller following the job waits through a
short outage and gets the database's error after a long one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codebase_mcp_search.adapters.memory import InMemoryJobQueue
from codebase_mcp_search.core.errors import StoreUnavailable
from codebase_mcp_search.core.models import IndexRequest, IndexResult, JobStatus
from codebase_mcp_search.core.services import (
    CancellationToken,
    JobService,
    JobWorker,
    RunProgress,
    WorkerConfig,
)
from tests.unit.test_job_worker import FAST, _result, _start, indexing, running, until


class AwayQueue(InMemoryJobQueue):
    """An in-memory queue whose methods named in ``away`` fail as a database that does not
    answer; ``recorded`` lists the statuses ``finish`` stored."""

    def __init__(self) -> None:
        super().__init__()
        self.away: set[str] = set()
        self.recorded: list[JobStatus] = []

    def _check(self, method: str) -> None:
        if method in self.away:
            raise StoreUnavailable("the database is not answering")

    async def finish(self, *args: Any, **kwargs: Any) -> Any:
        self._check("finish")
        job = await super().finish(*args, **kwargs)
        self.recorded.append(job.status)
        return job

    async def renew(self, *args: Any, **kwargs: Any) -> Any:
        self._check("renew")
        return await super().renew(*args, **kwargs)

    async def claim(self, *args: Any, **kwargs: Any) -> Any:
        self._check("claim")
        return await super().claim(*args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        self._check("get")
        return await super().get(*args, **kwargs)


ALL = {"finish", "renew", "claim", "get"}


async def test_a_job_the_database_failed_shows_blocked_once_it_is_back() -> None:
    queue = AwayQueue()
    service = JobService(queue)
    attempts = 0

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        nonlocal attempts
        attempts += 1
        if attempts == 1:  # the database dies under the run
            queue.away |= ALL
            raise StoreUnavailable("the connection was lost")
        return _result(request)

    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        await until(lambda: attempts == 1)
        await asyncio.sleep(0.5)  # several retries' worth of the database being away
        assert queue.recorded == []
        queue.away.clear()
        await until(lambda: JobStatus.COMPLETED in queue.recorded)
    # Not retried blind while the database was away, and seen blocked before it ran again.
    assert attempts == 2
    assert queue.recorded == [JobStatus.BLOCKED, JobStatus.RUNNING, JobStatus.COMPLETED]
    assert (await queue.get(job.id)).status is JobStatus.COMPLETED


async def test_a_job_whose_lease_lapsed_is_not_run_twice_by_its_worker() -> None:
    queue = AwayQueue()
    service = JobService(queue)
    go_on = asyncio.Event()
    runs = 0

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        nonlocal runs
        runs += 1
        await go_on.wait()
        return _result(request)

    short = WorkerConfig(lease_s=0.2, heartbeat_s=0.05, poll_s=0.05, retry_s=0.05)
    job = await _start(service, 1)
    async with running(JobWorker(queue, indexing(runner), "w", short)) as worker:
        await until(lambda: runs == 1)
        queue.away.add("renew")  # the lease lapses: the job is claimable again
        await until(lambda: queue._jobs[job.id].attempts >= 2)
        queue.away.clear()
        assert worker.running == [job.id]
        go_on.set()
        await until(lambda: JobStatus.COMPLETED in queue.recorded)
    assert runs == 1


async def test_a_caller_follows_a_job_through_a_short_outage() -> None:
    queue = AwayQueue()
    service = JobService(queue, poll_s=0.02, outage_s=5.0)
    done = asyncio.Event()

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        await done.wait()
        return _result(request)

    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        call = asyncio.create_task(service.run("p", IndexRequest(root="/r1", name="r1")))
        await asyncio.sleep(0.1)
        queue.away.add("get")
        await asyncio.sleep(0.3)
        assert not call.done()
        queue.away.clear()
        done.set()
        result = await asyncio.wait_for(call, 5)
    assert result.repository_name == "r1"


async def test_a_caller_gets_the_database_error_after_a_long_outage() -> None:
    queue = AwayQueue()
    service = JobService(queue, poll_s=0.02, outage_s=0.3)

    async def runner(
        request: IndexRequest, tracker: RunProgress, token: CancellationToken
    ) -> IndexResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async with running(JobWorker(queue, indexing(runner), "w", FAST)):
        call = asyncio.create_task(service.run("p", IndexRequest(root="/r1", name="r1")))
        await asyncio.sleep(0.1)
        queue.away.add("get")
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(call, 5)
