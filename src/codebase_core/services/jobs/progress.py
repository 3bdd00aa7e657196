"""A job's progress from its indexing run's reports: one percentage that only grows.

The run interleaves its phases batch by batch (while one batch is embedded the next is
chunked and an earlier one written), so each phase's share is weighted by how far that phase
is over the whole run: scanning 0-10%, chunking 10-50%, embedding 50-90%, writing 90-100%.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from codebase_mcp_search.core.models import JobProgress, ProgressPhase
from codebase_mcp_search.core.services.indexing.progress import RunCounts

SCAN_SHARE = 10.0
CHUNK_SHARE = 40.0
EMBED_SHARE = 40.0
WRITE_SHARE = 10.0
MIN_ETA_S = 1.0
"""Progress measured over less time than this says little about the rest of the run."""


def _fraction(done: int, total: int) -> float:
    return 1.0 if total <= 0 else min(1.0, done / total)


def run_percentage(phase: ProgressPhase, counts: RunCounts) -> float:
    """Where a run is on 0-100 from its counts (not yet made monotonic).

    The embedding total grows as batches are cut: it is extrapolated from the share of files
    chunked so far. A run with nothing to embed (no embedder, or every vector cached) counts
    its embedding share as the chunking goes.
    """
    if phase == "done":
        return 100.0
    if phase in ("waiting", "scanning"):
        # What is left to index is known only once the scan is compared with the index.
        return SCAN_SHARE if counts.files_scanned else 0.0
    chunked = _fraction(counts.files_chunked, counts.files_to_index)
    written = _fraction(counts.files_written, counts.files_to_index)
    if counts.to_embed == 0:
        embedded = chunked
    else:
        expected = counts.to_embed / max(chunked, 1e-9)
        embedded = min(1.0, counts.embedded / expected)
    value = (
        SCAN_SHARE + CHUNK_SHARE * chunked + EMBED_SHARE * embedded + (WRITE_SHARE - 1) * written
    )
    if phase in ("deleting", "optimizing"):
        value = max(value, 99.0)
    return min(value, 99.0)


def run_message(phase: ProgressPhase, counts: RunCounts, done: int, total: int) -> str:
    """What the run is doing now, in a few words with its counts."""
    if phase == "waiting":
        return "Waiting: another process is indexing this repository"
    if phase == "scanning":
        return f"Scanned {counts.files_scanned} files" if counts.files_scanned else "Scanning files"
    if phase == "chunking":
        return f"Chunking files: {counts.files_chunked}/{counts.files_to_index}"
    if phase == "embedding":
        return f"Generating embeddings: {counts.embedded}/{counts.to_embed}"
    if phase == "writing":
        return f"Writing files: {counts.files_written}/{counts.files_to_index}"
    if phase == "deleting":
        return f"Removing deleted files: {done}/{total}"
    if phase == "optimizing":
        return "Building search indexes"
    return "Completed"


class JobProgressTracker:
    """The progress callback of a job's run: keeps its phase, counts and a monotonic
    percentage, and gives a ``JobProgress`` (with an ETA from the observed rate) on demand."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, floor: int = 0) -> None:
        self.counts = RunCounts()
        self._clock = clock
        self._phase: ProgressPhase = "scanning"
        self._done = 0
        self._total = 0
        # A resumed job starts where its last run reported: the percentage never goes back.
        self._highest = float(floor)
        self._since: tuple[float, float] | None = None
        """(time, percentage) when the scan ended: the rate is measured from there."""

    def __call__(self, phase: ProgressPhase, done: int, total: int) -> None:
        self._phase, self._done, self._total = phase, done, total
        value = run_percentage(phase, self.counts)
        self._highest = max(self._highest, value)
        if self._since is None and phase not in ("waiting", "scanning"):
            self._since = (self._clock(), self._highest)

    @property
    def percentage(self) -> int:
        return int(self._highest)

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
        counts = self.counts
        return JobProgress(
            percentage=self.percentage,
            message=run_message(self._phase, counts, self._done, self._total),
            files_scanned=counts.files_scanned,
            files_indexed=counts.files_indexed,
            chunks_created=counts.chunks_created,
            eta_seconds=self.eta_seconds(),
        )
