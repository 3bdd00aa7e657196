"""What a caller hands a long indexing run (a progress callback, a cancellation token, live
counts), and the one progress scale of a run: a percentage that only grows.

A lexical run interleaves its phases batch by batch (while one batch is written the next is
chunked), so each phase's share is weighted by how far that phase is over the whole run:
scanning 0-10%, chunking 10-70%, writing 70-100%. A run of the semantic layer is the share of
its vectors stored.

A job may take several runs (one blocked by a lost database is retried; one whose worker died
is resumed by another): each run starts from fresh counts, and ``RunProgress`` reports the
whole job, what its earlier runs did added to the current run's counts. A resumed run skips
the files an earlier one wrote (they are unchanged now), so the job's total is what earlier
runs wrote plus what this run has left: a count never passes its total.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from codebase_mcp_search.core.errors import Cancelled
from codebase_mcp_search.core.models import (
    IndexResult,
    Job,
    JobProgress,
    ProgressPhase,
    VectorResult,
)

ProgressCallback = Callable[[ProgressPhase, int, int], Awaitable[None] | None]


class CancellationToken:
    """Set by a caller to ask long work to stop at its next safe point."""

    def __init__(self) -> None:
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise Cancelled("indexing was cancelled; files written so far are consistent")


async def report(
    callback: ProgressCallback | None, phase: ProgressPhase, done: int, total: int
) -> None:
    """Tell ``callback`` (sync or async, if any) that ``done`` of ``total`` of ``phase`` are done."""
    if callback is None:
        return
    outcome = callback(phase, done, total)
    if inspect.isawaitable(outcome):
        await outcome


@dataclass(slots=True)
class RunCounts:
    """What an indexing run has done so far, kept current by the run."""

    files_scanned: int = 0
    files_to_index: int = 0
    """Files new or changed since the last run (known once the scan is diffed)."""
    files_chunked: int = 0
    files_indexed: int = 0
    chunks_created: int = 0
    files_written: int = 0
    embedded: int = 0
    """Chunk texts the model embedded."""
    cached: int = 0
    """Chunks given a vector from the embedding cache."""
    truncated: int = 0
    to_embed: int = 0
    """Chunks known to need a vector so far (the semantic layer's growing total)."""
    vectors_stored: int = 0


def whole_job(earlier: RunCounts, current: RunCounts) -> RunCounts:
    """A job's counts over its runs: ``earlier`` (what the runs before did; only its additive
    counts are read) and the ``current`` run. The current run's totals (files to index,
    chunks to embed) leave out what earlier runs did, so that is added to them too."""
    written, stored = earlier.files_written, earlier.vectors_stored
    return RunCounts(
        files_scanned=current.files_scanned or earlier.files_scanned,
        files_to_index=written + current.files_to_index,
        files_chunked=written + current.files_chunked,
        files_indexed=earlier.files_indexed + current.files_indexed,
        chunks_created=earlier.chunks_created + current.chunks_created,
        files_written=written + current.files_written,
        embedded=earlier.embedded + current.embedded,
        cached=earlier.cached + current.cached,
        truncated=earlier.truncated + current.truncated,
        to_embed=stored + current.to_embed,
        vectors_stored=stored + current.vectors_stored,
    )


SCAN_SHARE = 10.0
CHUNK_SHARE = 60.0
WRITE_SHARE = 30.0
MIN_ETA_S = 1.0
"""Progress measured over less time than this says little about the rest of the run."""


def _fraction(done: int, total: int) -> float:
    return 1.0 if total <= 0 else min(1.0, done / total)


def run_percentage(phase: ProgressPhase, counts: RunCounts) -> float:
    """Where a run is on 0-100 from its counts (not yet made monotonic): a lexical run by its
    files, a run of the semantic layer (phase ``embedding``) by its vectors."""
    if phase == "done":
        return 100.0
    if phase in ("waiting", "scanning"):
        # What is left to index is known only once the scan is compared with the index.
        return SCAN_SHARE if counts.files_scanned else 0.0
    if phase == "embedding":
        return min(99.0, 99.0 * _fraction(counts.vectors_stored, counts.to_embed))
    chunked = _fraction(counts.files_chunked, counts.files_to_index)
    written = _fraction(counts.files_written, counts.files_to_index)
    value = SCAN_SHARE + CHUNK_SHARE * chunked + (WRITE_SHARE - 1) * written
    if phase in ("deleting", "optimizing"):
        value = max(value, 99.0)
    return min(value, 99.0)


def _of(done: int, total: int) -> str:
    """``done/total``; a total known to be short (the counts are kept right, this is the
    last guard) shows as ``done/done``, never as more done than there is."""
    return f"{done}/{max(done, total)}"


def run_message(phase: ProgressPhase, counts: RunCounts, done: int, total: int) -> str:
    """What the run is doing now, in a few words with its counts."""
    if phase == "waiting":
        return "Waiting: another process is indexing this repository"
    if phase == "scanning":
        return f"Scanned {counts.files_scanned} files" if counts.files_scanned else "Scanning files"
    if phase == "chunking":
        return f"Chunking files: {_of(counts.files_chunked, counts.files_to_index)}"
    if phase == "embedding":
        return f"Generating embeddings: {_of(counts.vectors_stored, counts.to_embed)}"
    if phase == "writing":
        return f"Writing files: {_of(counts.files_written, counts.files_to_index)}"
    if phase == "deleting":
        return f"Removing deleted files: {_of(done, total)}"
    if phase == "optimizing":
        return "Building search indexes"
    return "Completed"


class RunProgress:
    """A progress callback that keeps a run's phase, counts and a percentage that only grows,
    with a message and an ETA from the observed rate: the one scale every interface shows (a
    job's progress, the MCP server's notifications). Over a job of several runs it reports
    the whole job (see the module doc and ``next_attempt``)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        floor: int = 0,
        earlier: RunCounts | None = None,
        on_change: Callable[[RunProgress], Awaitable[None] | None] | None = None,
    ) -> None:
        """``on_change`` hears the tracker after each report (to pass it on, say); hand the
        run ``counts`` too (``IndexingService.index(..., counts=tracker.counts)``).
        ``floor`` and ``earlier``: where a resumed job's earlier runs left it (its recorded
        percentage and counts)."""
        self.counts = RunCounts()
        self._earlier = earlier if earlier is not None else RunCounts()
        self._clock = clock
        self._on_change = on_change
        self._phase: ProgressPhase = "scanning"
        self._done = 0
        self._total = 0
        # A resumed job starts where its last run reported: the percentage never goes back.
        self._highest = float(floor)
        self._since: tuple[float, float] | None = None
        """(time, percentage) when the scan ended: the rate is measured from there."""

    @classmethod
    def resuming(cls, job: Job) -> RunProgress:
        """The tracker of ``job``'s next runs, going on from what its earlier runs recorded
        (at their last heartbeat; nothing for a job never run). Files written are not
        recorded apart: every file a lexical run writes is one it indexed."""
        earlier = RunCounts(
            files_scanned=job.files_scanned,
            files_indexed=job.files_indexed,
            files_written=job.files_indexed,
            chunks_created=job.chunks_created,
            embedded=job.chunks_embedded,
            vectors_stored=job.vectors_stored,
        )
        return cls(floor=job.progress_percentage, earlier=earlier)

    def next_attempt(self) -> RunCounts:
        """Fresh counts for the job's next run (hand them to it), the last run's counts
        joining its earlier runs': a retried run counts from zero, and the job from where
        it was."""
        self._earlier = whole_job(self._earlier, self.counts)
        self.counts = RunCounts()
        return self.counts

    @property
    def job_counts(self) -> RunCounts:
        """The whole job's counts: its earlier runs' and the current run's."""
        return whole_job(self._earlier, self.counts)

    def job_result(self, result: IndexResult | VectorResult) -> IndexResult | VectorResult:
        """The last run's ``result`` as the whole job's: what earlier runs wrote and embedded
        added, and the files they wrote (unchanged for the last run) no longer unchanged."""
        e = self._earlier
        added = {
            "chunks_embedded": result.chunks_embedded + e.embedded,
            "embeddings_cached": result.embeddings_cached + e.cached,
            "chunks_truncated": result.chunks_truncated + e.truncated,
        }
        if isinstance(result, IndexResult):
            added |= {
                "files_indexed": result.files_indexed + e.files_indexed,
                "chunks_created": result.chunks_created + e.chunks_created,
                "files_unchanged": max(0, result.files_unchanged - e.files_written),
            }
        return result.model_copy(update=added)

    def __call__(self, phase: ProgressPhase, done: int, total: int) -> Awaitable[None] | None:
        self._phase, self._done, self._total = phase, done, total
        value = run_percentage(phase, self.job_counts)
        self._highest = max(self._highest, value)
        if self._since is None and phase not in ("waiting", "scanning"):
            self._since = (self._clock(), self._highest)
        return self._on_change(self) if self._on_change is not None else None

    @property
    def percentage(self) -> int:
        return int(self._highest)

    @property
    def message(self) -> str:
        """What the run is doing now (``run_message``)."""
        return run_message(self._phase, self.job_counts, self._done, self._total)

    def eta_seconds(self) -> float | None:
        """Seconds left at the rate since the scan ended; None until it means something."""
        if self._since is None or self._phase == "done":
            return None
        began, at = self._since
        elapsed = self._clock() - began
        gained = self._highest - at
        if elapsed < MIN_ETA_S or gained <= 0:
            return None
        return round((100.0 - self._highest) * elapsed / gained, 1)

    def snapshot(self) -> JobProgress:
        counts = self.job_counts
        return JobProgress(
            percentage=self.percentage,
            message=self.message,
            files_scanned=counts.files_scanned,
            files_indexed=counts.files_indexed,
            chunks_created=counts.chunks_created,
            vectors_stored=counts.vectors_stored,
            chunks_embedded=counts.embedded,
            eta_seconds=self.eta_seconds(),
        )
