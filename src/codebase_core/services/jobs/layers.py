"""What a job of each kind runs, and the semantic job that follows: a lexical job that leaves
chunks without a vector queues one, and a semantic job that ends with some still missing
(written by a lexical run while it went) queues the next."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from codebase_mcp_search.core.errors import DuplicateJob
from codebase_mcp_search.core.models import (
    IndexRequest,
    IndexResult,
    Job,
    JobKind,
    VectorResult,
    new_job,
)
from codebase_mcp_search.core.ports import JobQueue
from codebase_mcp_search.core.services.indexing import (
    CancellationToken,
    ProgressCallback,
    RunCounts,
    RunProgress,
)


class Indexer(Protocol):
    """The two runs of a project's ``IndexingService`` that jobs stand for."""

    async def index(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> IndexResult: ...

    async def build_vectors(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> VectorResult: ...

    async def vectors_missing(self, request: IndexRequest) -> int: ...


IndexingFor = Callable[[str], Awaitable[Indexer]]
"""A project's indexing service, by project id."""


async def run_layer(
    indexing: IndexingFor,
    queue: JobQueue,
    job: Job,
    tracker: RunProgress,
    token: CancellationToken,
    clock: Callable[[], datetime],
) -> IndexResult | VectorResult:
    """Run ``job``'s layer, reporting into ``tracker`` (one more run of the job: it counts
    from zero, the tracker adds what earlier runs did); a lexical job's result names the
    semantic job queued after it (see the module doc)."""
    service = await indexing(job.project_id)
    request = job.request()
    counts = tracker.next_attempt()
    if job.kind is JobKind.SEMANTIC:
        return await service.build_vectors(request, progress=tracker, cancel=token, counts=counts)
    result = await service.index(request, progress=tracker, cancel=token, counts=counts)
    if result.vectors_missing:
        follow = await queue_vectors(queue, job, clock)
        result = result.model_copy(update={"vectors_job_id": follow})
    return result


async def after_vectors(
    indexing: IndexingFor, queue: JobQueue, job: Job, clock: Callable[[], datetime]
) -> str | None:
    """Once a semantic job has ended: the next one, if chunks still wait for a vector (a
    lexical job that wrote them while it ran found it active and queued none)."""
    service = await indexing(job.project_id)
    if await service.vectors_missing(job.request()):
        return await queue_vectors(queue, job, clock)
    return None


async def queue_vectors(queue: JobQueue, job: Job, clock: Callable[[], datetime]) -> str:
    """The id of the semantic job of ``job``'s repository: queued now, or the one active."""
    request = job.request().model_copy(update={"force": False})
    try:
        queued = await queue.submit(new_job(job.project_id, request, JobKind.SEMANTIC, clock()))
    except DuplicateJob as e:
        return str(e.details["job_id"])
    return queued.id
