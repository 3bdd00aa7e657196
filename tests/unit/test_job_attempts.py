"""A job run in several attempts (a block retried, a dead worker's job resumed) reports the
whole job: its counts add up over the attempts, and no progress text passes its total."""

from __future__ import annotations

import re
from collections.abc import Awaitable

import pytest

from codebase_mcp_search.adapters.memory import (
    InMemoryChunkStore,
    InMemoryJobQueue,
    InMemorySourceTree,
)
from codebase_mcp_search.core.errors import Cancelled, StoreUnavailable
from codebase_mcp_search.core.models import (
    IndexRequest,
    IndexResult,
    JobKind,
    JobProgress,
    JobStatus,
    VectorResult,
    new_job,
    utcnow,
)
from codebase_mcp_search.core.services import (
    CancellationToken,
    IndexingFor,
    IndexingService,
    JobService,
    JobWorker,
    ProgressCallback,
    RunCounts,
    RunProgress,
)
from tests.factories import THREADS
from tests.unit.indexing_doubles import (
    CHUNKER,
    TOKENS,
    CountingEmbedder,
    new_service,
    numbered_files,
)
from tests.unit.test_job_worker import FAST, _is, running, until

ROOT = "/repo"
FILES = 20


class FailsOnce(InMemoryChunkStore):
    """The database goes away once, at the ``at``-th batch write."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.writes = at, 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.writes += 1
        if self.writes == self.at:
            raise StoreUnavailable("the connection was lost")
        await super().replace_files(repository_id, files)


class Watched:
    """A project's indexing service whose every progress report is seen by the test: the
    job's progress text after each (the tracker's, what get_job_status would show)."""

    def __init__(self, service: IndexingService) -> None:
        self.service = service
        self.messages: list[str] = []

    async def index(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> IndexResult:
        return await self.service.index(
            request, progress=self._seen(progress), cancel=cancel, counts=counts
        )

    async def build_vectors(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> VectorResult:
        return await self.service.build_vectors(
            request, progress=self._seen(progress), cancel=cancel, counts=counts
        )

    def _seen(self, progress: ProgressCallback | None) -> ProgressCallback:
        assert isinstance(progress, RunProgress)
        tracker = progress

        def seen(phase, done, total) -> Awaitable[None] | None:  # type: ignore[no-untyped-def]
            outcome = tracker(phase, done, total)
            self.messages.append(tracker.message)
            return outcome

        return seen

    async def vectors_missing(self, request: IndexRequest) -> int:
        return 0


def resolver(watched: Watched) -> IndexingFor:
    async def resolve(project_id: str) -> Watched:
        return watched

    return resolve  # type: ignore[return-value]


def overshoots(messages: list[str]) -> list[str]:
    """Progress texts whose count passes their total (``Writing files: 896/876``)."""
    out = []
    for message in messages:
        for done, total in re.findall(r"(\d+)/(\d+)", message):
            if int(done) > int(total):
                out.append(message)
    return out


async def test_a_blocked_and_retried_job_counts_every_attempt() -> None:
    tree = InMemorySourceTree({ROOT: numbered_files(FILES)})
    store = FailsOnce(at=3)  # batches of two files: four written, then the database is lost
    watched = Watched(new_service(tree, store, None))
    queue = InMemoryJobQueue()
    job = await JobService(queue).start("p", IndexRequest(root=ROOT))
    async with running(JobWorker(queue, resolver(watched), "w", FAST)):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    done = await queue.get(job.id)
    assert done.attempts == 1  # one claim, two runs: the block was retried in place
    assert overshoots(watched.messages) == []
    assert "Writing files: 20/20" in watched.messages
    assert (done.files_scanned, done.files_indexed, done.chunks_created) == (FILES, FILES, FILES)
    assert isinstance(done.result, IndexResult)
    assert (done.result.files_indexed, done.result.chunks_created) == (FILES, FILES)
    assert done.result.files_unchanged == 0


async def test_a_resumed_job_counts_what_its_dead_worker_did() -> None:
    tree = InMemorySourceTree({ROOT: numbered_files(8)})
    store = InMemoryChunkStore()
    service = new_service(tree, store, None)
    queue = InMemoryJobQueue()
    job = await JobService(queue).start("p", IndexRequest(root=ROOT))
    # A worker claimed it, wrote 8 files of 20, recorded so at its last heartbeat and died.
    await queue.claim("gone", 3600)
    await service.index(IndexRequest(root=ROOT))
    await queue.renew(
        job.id,
        "gone",
        3600,
        JobProgress(
            percentage=40,
            message="Writing files: 8/20",
            files_scanned=FILES,
            files_indexed=8,
            chunks_created=8,
        ),
    )
    tree = InMemorySourceTree({ROOT: numbered_files(FILES)})
    watched = Watched(new_service(tree, store, None))
    worker = JobWorker(queue, resolver(watched), "new", FAST, is_dead=lambda wid: wid == "gone")
    async with running(worker):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    done = await queue.get(job.id)
    assert done.attempts == 2
    assert (done.files_scanned, done.files_indexed, done.chunks_created) == (FILES, FILES, FILES)
    assert overshoots(watched.messages) == []
    assert "Writing files: 20/20" in watched.messages
    assert isinstance(done.result, IndexResult)
    assert (done.result.files_indexed, done.result.chunks_created) == (FILES, FILES)
    assert done.result.files_unchanged == 0


def test_a_retried_semantic_run_counts_its_vectors_over_both_runs() -> None:
    tracker = RunProgress()
    first = tracker.next_attempt()
    first.to_embed = 100
    first.vectors_stored = 30
    tracker("embedding", 30, 100)
    assert tracker.message == "Generating embeddings: 30/100"
    second = tracker.next_attempt()  # blocked, then retried: 70 vectors still missing
    assert second is tracker.counts and second.vectors_stored == 0
    second.to_embed = 70
    tracker("embedding", 0, 70)
    assert tracker.message == "Generating embeddings: 30/100"
    second.vectors_stored = 70
    tracker("embedding", 70, 70)
    assert tracker.message == "Generating embeddings: 100/100"
    assert tracker.percentage == 99


async def test_a_resumed_semantic_job_counts_the_vectors_its_dead_worker_stored() -> None:
    tree = InMemorySourceTree({ROOT: numbered_files(FILES)})
    store = InMemoryChunkStore()
    service = IndexingService(
        store, tree, CHUNKER, TOKENS, CountingEmbedder(), chunking_pool=THREADS, vector_batch=4
    )
    request = IndexRequest(root=ROOT)
    assert (await service.index(request)).vectors_missing == FILES
    queue = InMemoryJobQueue()
    job = await queue.submit(new_job("p", request, JobKind.SEMANTIC, utcnow()))
    # A worker claimed it, stored two batches of vectors, recorded so at a heartbeat and died.
    claimed = await queue.claim("gone", 3600)
    assert claimed is not None
    tracker, token = RunProgress.resuming(claimed), CancellationToken()

    def two_batches(phase, done, total) -> Awaitable[None] | None:  # type: ignore[no-untyped-def]
        if done >= 8:
            token.cancel()
        return tracker(phase, done, total)

    with pytest.raises(Cancelled):
        await service.build_vectors(
            request, progress=two_batches, cancel=token, counts=tracker.next_attempt()
        )
    await queue.renew(job.id, "gone", 3600, tracker.snapshot())
    assert (await queue.get(job.id)).progress_message == f"Generating embeddings: 8/{FILES}"
    watched = Watched(service)
    worker = JobWorker(queue, resolver(watched), "new", FAST, is_dead=lambda wid: wid == "gone")
    async with running(worker):
        await until(_is(queue, job.id, JobStatus.COMPLETED))
    done = await queue.get(job.id)
    embedding = [m for m in watched.messages if m.startswith("Generating embeddings")]
    # The job goes on from the 8 vectors stored, not from 0 of the 12 left.
    assert embedding[0] == f"Generating embeddings: 8/{FILES}"
    assert embedding[-1] == f"Generating embeddings: {FILES}/{FILES}"
    assert overshoots(watched.messages) == []
    assert (done.vectors_stored, done.chunks_embedded) == (FILES, FILES)
    assert isinstance(done.result, VectorResult)
    assert done.result.chunks_embedded == FILES
