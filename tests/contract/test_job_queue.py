"""JobQueue contract: every adapter must pass every test here."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from codebase_mcp_search.core.errors import DuplicateJob, InvalidStatus, JobLeaseLost, JobNotFound
from codebase_mcp_search.core.models import (
    Job,
    JobOutcome,
    JobProgress,
    JobStatus,
    new_job_id,
    utcnow,
)
from codebase_mcp_search.core.ports import JobQueue
from tests.factories import index_result

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LEASE = 30.0


def _job(n: int, project: str = "p", repo: str | None = None) -> Job:
    return Job(
        id=new_job_id(),
        project_id=project,
        repo_path=repo or f"/repos/r{n}",
        repo_name=f"r{n}",
        created_at=T0 + timedelta(seconds=n),
    )


def test_is_a_job_queue(job_queue: JobQueue) -> None:
    assert isinstance(job_queue, JobQueue)


async def test_submit_get_and_not_found(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    assert job.status is JobStatus.PENDING
    assert await job_queue.get(job.id) == job
    with pytest.raises(JobNotFound):
        await job_queue.get(new_job_id())


async def test_a_second_active_job_for_a_repository_is_refused(job_queue: JobQueue) -> None:
    first = await job_queue.submit(_job(1, repo="/r"))
    with pytest.raises(DuplicateJob) as raised:
        await job_queue.submit(_job(2, repo="/r"))
    assert first.id in raised.value.message
    # Another project, or another repository, is no duplicate.
    await job_queue.submit(_job(3, project="q", repo="/r"))
    await job_queue.submit(_job(4, repo="/other"))
    # Once the first has ended, the repository takes a new job.
    await job_queue.request_cancel(first.id)
    again = await job_queue.submit(_job(5, repo="/r"))
    assert again.status is JobStatus.PENDING


async def test_list_is_newest_first_filtered_and_paged(job_queue: JobQueue) -> None:
    jobs = [await job_queue.submit(_job(n, project="a" if n % 2 else "b")) for n in range(5)]
    await job_queue.request_cancel(jobs[0].id)
    page = await job_queue.list(limit=2)
    assert [j.id for j in page.jobs] == [jobs[4].id, jobs[3].id]
    assert page.total_count == 5
    rest = await job_queue.list(limit=10, offset=2)
    assert [j.id for j in rest.jobs] == [jobs[2].id, jobs[1].id, jobs[0].id]
    a = await job_queue.list(project_id="a")
    assert {j.id for j in a.jobs} == {jobs[1].id, jobs[3].id}
    cancelled = await job_queue.list(status=JobStatus.CANCELLED)
    assert [j.id for j in cancelled.jobs] == [jobs[0].id]
    assert cancelled.total_count == 1
    assert (await job_queue.list(project_id="nobody")).total_count == 0


async def test_claim_takes_the_oldest_and_leases_it(job_queue: JobQueue) -> None:
    assert await job_queue.claim("w1", LEASE) is None
    old = await job_queue.submit(_job(1))
    await job_queue.submit(_job(2))
    before = utcnow()
    claimed = await job_queue.claim("w1", LEASE)
    assert claimed is not None and claimed.id == old.id
    assert claimed.status is JobStatus.RUNNING
    assert claimed.worker_id == "w1" and claimed.attempts == 1
    assert claimed.started_at is not None
    assert claimed.lease_expires_at is not None
    assert claimed.lease_expires_at > before + timedelta(seconds=LEASE - 5)


async def test_concurrent_claims_never_share_a_job(job_queue: JobQueue) -> None:
    for n in range(6):
        await job_queue.submit(_job(n))
    claimed = await asyncio.gather(*(job_queue.claim(f"w{i}", LEASE) for i in range(10)))
    ids = [j.id for j in claimed if j is not None]
    assert len(ids) == 6 and len(set(ids)) == 6


async def test_an_expired_lease_is_taken_over(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    held = await job_queue.claim("dead", 0.2)
    assert held is not None
    assert await job_queue.claim("alive", LEASE) is None  # still leased
    await asyncio.sleep(0.4)
    taken = await job_queue.claim("alive", LEASE)
    assert taken is not None and taken.id == job.id
    assert taken.status is JobStatus.RUNNING and taken.worker_id == "alive"
    assert taken.attempts == 2
    with pytest.raises(JobLeaseLost):
        await job_queue.renew(job.id, "dead", LEASE, None)
    with pytest.raises(JobLeaseLost):
        await job_queue.finish(job.id, "dead", JobOutcome(status=JobStatus.COMPLETED))


async def test_renew_records_progress_that_only_grows(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("w", 0.3)
    progress = JobProgress(
        percentage=40,
        message="Generating embeddings: 10/100",
        files_scanned=9,
        files_indexed=2,
        chunks_created=5,
        vectors_stored=10,
        chunks_embedded=7,
        eta_seconds=12.5,
    )
    renewed = await job_queue.renew(job.id, "w", LEASE, progress)
    assert renewed.progress_percentage == 40
    assert renewed.progress_message == "Generating embeddings: 10/100"
    assert (renewed.files_scanned, renewed.files_indexed, renewed.chunks_created) == (9, 2, 5)
    # A worker resuming the job goes on from these counts.
    assert (renewed.vectors_stored, renewed.chunks_embedded) == (10, 7)
    assert (await job_queue.get(job.id)).vectors_stored == 10
    assert renewed.eta_seconds == 12.5
    lower = progress.model_copy(update={"percentage": 30, "message": "Writing files: 3/9"})
    again = await job_queue.renew(job.id, "w", LEASE, lower)
    assert again.progress_percentage == 40 and again.progress_message == "Writing files: 3/9"
    # The renewed lease outlives the first one.
    await asyncio.sleep(0.4)
    assert await job_queue.claim("other", LEASE) is None


async def test_finish_follows_the_state_machine(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("w", LEASE)
    blocked = await job_queue.finish(
        job.id,
        "w",
        JobOutcome(status=JobStatus.BLOCKED, error_message="server down", error_type="X"),
    )
    assert blocked.status is JobStatus.BLOCKED and blocked.error_message == "server down"
    assert blocked.lease_expires_at is not None  # still held while blocked
    with pytest.raises(InvalidStatus):
        await job_queue.finish(job.id, "w", JobOutcome(status=JobStatus.COMPLETED))
    running = await job_queue.finish(job.id, "w", JobOutcome(status=JobStatus.RUNNING))
    assert running.status is JobStatus.RUNNING and running.error_message is None
    done = await job_queue.finish(
        job.id, "w", JobOutcome(status=JobStatus.COMPLETED, result=index_result())
    )
    assert done.status is JobStatus.COMPLETED
    assert done.completed_at is not None and done.cancelled_at is None
    assert done.progress_percentage == 100 and done.eta_seconds is None
    assert done.result == index_result()
    assert (await job_queue.get(job.id)).result == index_result()
    with pytest.raises(JobLeaseLost):
        await job_queue.finish(job.id, "w", JobOutcome(status=JobStatus.FAILED))


async def test_failed_keeps_its_error(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("w", LEASE)
    failed = await job_queue.finish(
        job.id,
        "w",
        JobOutcome(status=JobStatus.FAILED, error_message="bad root", error_type="VALIDATION"),
    )
    assert (failed.status, failed.error_message, failed.error_type) == (
        JobStatus.FAILED,
        "bad root",
        "VALIDATION",
    )
    assert failed.completed_at is not None


async def test_cancel_pending_running_blocked_and_terminal(job_queue: JobQueue) -> None:
    pending = await job_queue.submit(_job(1))
    cancelled = await job_queue.request_cancel(pending.id)
    assert cancelled.status is JobStatus.CANCELLED and cancelled.cancelled_at is not None
    with pytest.raises(InvalidStatus) as raised:
        await job_queue.request_cancel(pending.id)
    assert "cancelled" in raised.value.message and "pending" in raised.value.message

    running = await job_queue.submit(_job(2))
    await job_queue.claim("w", LEASE)
    asked = await job_queue.request_cancel(running.id)
    assert asked.status is JobStatus.RUNNING and asked.cancel_requested
    renewed = await job_queue.renew(running.id, "w", LEASE, None)
    assert renewed.cancel_requested
    ended = await job_queue.finish(running.id, "w", JobOutcome(status=JobStatus.CANCELLED))
    assert ended.status is JobStatus.CANCELLED and ended.cancelled_at is not None

    blocked = await job_queue.submit(_job(3))
    await job_queue.claim("w", LEASE)
    await job_queue.finish(blocked.id, "w", JobOutcome(status=JobStatus.BLOCKED))
    marked = await job_queue.request_cancel(blocked.id)
    assert marked.status is JobStatus.BLOCKED and marked.cancel_requested

    with pytest.raises(JobNotFound):
        await job_queue.request_cancel(new_job_id())


async def test_cancelling_a_job_whose_worker_died_ends_it(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("dead", 0.1)
    await job_queue.finish(job.id, "dead", JobOutcome(status=JobStatus.BLOCKED))
    await asyncio.sleep(0.3)
    ended = await job_queue.request_cancel(job.id)
    assert ended.status is JobStatus.CANCELLED
    assert await job_queue.claim("w", LEASE) is None


async def test_a_claim_ends_a_job_whose_cancellation_was_asked(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("dead", 0.2)
    await job_queue.request_cancel(job.id)  # marked: its worker is still leased
    await asyncio.sleep(0.4)
    assert await job_queue.claim("w", LEASE) is None
    assert (await job_queue.get(job.id)).status is JobStatus.CANCELLED


async def test_release_hands_jobs_back_at_once(job_queue: JobQueue) -> None:
    job = await job_queue.submit(_job(1))
    await job_queue.claim("leaving", LEASE)
    assert await job_queue.release("leaving") == 1
    resumed = await job_queue.claim("next", LEASE)
    assert resumed is not None and resumed.id == job.id and resumed.attempts == 2


async def test_purge_deletes_only_old_terminal_jobs(job_queue: JobQueue) -> None:
    done = await job_queue.submit(_job(1))
    active = await job_queue.submit(_job(2))
    await job_queue.request_cancel(done.id)
    assert await job_queue.purge(utcnow() - timedelta(days=1)) == 0
    assert await job_queue.purge(utcnow() + timedelta(seconds=1)) == 1
    with pytest.raises(JobNotFound):
        await job_queue.get(done.id)
    assert (await job_queue.get(active.id)).status is JobStatus.PENDING
