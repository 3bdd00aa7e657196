"""The job state machine and a job's progress accounting (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codebase_mcp_search.core.errors import InvalidStatus, ValidationFailed
from codebase_mcp_search.core.models import JobStatus, check_job_id, check_transition, steps_to
from codebase_mcp_search.core.models.indexing import ProgressPhase
from codebase_mcp_search.core.models.jobs import ALLOWED, TERMINAL, can_transition
from codebase_mcp_search.core.services.indexing.progress import (
    RunCounts,
    RunProgress,
    run_percentage,
)

EXPECTED = {
    ("pending", "running"),
    ("pending", "cancelled"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
    ("running", "blocked"),
    ("blocked", "running"),
}
statuses = st.sampled_from(list(JobStatus))


@given(statuses, statuses)
def test_exactly_the_listed_transitions_are_allowed(old: JobStatus, new: JobStatus) -> None:
    allowed = (old.value, new.value) in EXPECTED
    assert can_transition(old, new) is allowed
    if allowed:
        check_transition(old, new)
    else:
        with pytest.raises(InvalidStatus) as raised:
            check_transition(old, new)
        assert old.value in raised.value.message and new.value in raised.value.message


@given(st.lists(statuses, max_size=12))
def test_no_walk_leaves_a_terminal_state(walk: list[JobStatus]) -> None:
    state = JobStatus.PENDING
    for step in walk:
        if can_transition(state, step):
            if state in TERMINAL:
                raise AssertionError(f"{state} -> {step}")
            state = step


def test_terminal_states_have_no_way_out() -> None:
    assert all(not ALLOWED[s] for s in TERMINAL)
    assert {s.terminal for s in JobStatus} == {True, False}


@given(statuses, statuses)
def test_steps_to_only_takes_allowed_steps(old: JobStatus, new: JobStatus) -> None:
    try:
        steps = steps_to(old, new)
    except InvalidStatus:
        assert not can_transition(old, new)
        return
    state = old
    for step in steps:
        assert can_transition(state, step)
        state = step
    assert state is new and len(steps) <= 2


def test_blocked_is_cancelled_through_running() -> None:
    assert steps_to(JobStatus.BLOCKED, JobStatus.CANCELLED) == [
        JobStatus.RUNNING,
        JobStatus.CANCELLED,
    ]


def test_status_parse() -> None:
    assert JobStatus.parse(" Running ") is JobStatus.RUNNING
    with pytest.raises(InvalidStatus) as raised:
        JobStatus.parse("done")
    assert "pending" in raised.value.message


def test_job_ids_are_uuids_in_any_case() -> None:
    raw = "  0F0E0D0C-0B0A-4908-8706-050403020100 "
    assert check_job_id(raw) == "0f0e0d0c-0b0a-4908-8706-050403020100"
    for bad in ("", "abc", "0f0e0d0c\x00", 42, None):
        with pytest.raises(ValidationFailed) as raised:
            check_job_id(bad)
        assert raised.value.field == "job_id"


PHASES: list[ProgressPhase] = [
    "waiting",
    "scanning",
    "chunking",
    "embedding",
    "writing",
    "deleting",
    "optimizing",
    "done",
]


@st.composite
def run_reports(draw: st.DrawFn) -> list[tuple[ProgressPhase, RunCounts]]:
    """A run's reports: counts that only grow, phases in any order the pipeline may give."""
    files = draw(st.integers(0, 50))
    counts = RunCounts()
    out: list[tuple[ProgressPhase, RunCounts]] = []
    for _ in range(draw(st.integers(1, 30))):
        phase = draw(st.sampled_from(PHASES[:-1]))
        if phase != "waiting":
            counts.files_scanned = files + 3
        if phase not in ("waiting", "scanning"):
            counts.files_to_index = files
            counts.files_chunked = min(files, counts.files_chunked + draw(st.integers(0, 5)))
            counts.to_embed += draw(st.integers(0, 40))
            counts.embedded = min(counts.to_embed, counts.embedded + draw(st.integers(0, 40)))
            counts.files_written = min(counts.files_chunked, counts.files_written + 2)
        out.append((phase, RunCounts(**{f: getattr(counts, f) for f in counts.__slots__})))
    out.append(("done", counts))
    return out


@given(run_reports())
def test_the_percentage_only_grows_stays_in_range_and_ends_at_100(
    reports: list[tuple[ProgressPhase, RunCounts]],
) -> None:
    tracker = RunProgress()
    seen: list[int] = []
    for phase, counts in reports:
        tracker.counts = counts
        tracker(phase, 0, 0)
        assert 0 <= run_percentage(phase, counts) <= 100
        seen.append(tracker.percentage)
    assert seen == sorted(seen)
    assert seen[-1] == 100
    assert all(p < 100 for p in seen[:-1])


def test_phases_cover_their_shares() -> None:
    counts = RunCounts(files_scanned=100, files_to_index=100)
    assert run_percentage("scanning", counts) == 10
    counts.files_chunked = 100  # everything chunked, nothing written yet
    assert run_percentage("chunking", counts) == pytest.approx(70)
    counts.files_written = 50
    assert run_percentage("writing", counts) == pytest.approx(84.5)
    counts.files_written = 100
    assert run_percentage("writing", counts) == pytest.approx(99)
    # A run of the semantic layer is the share of its vectors stored.
    vectors = RunCounts(to_embed=1000, vectors_stored=500)
    assert run_percentage("embedding", vectors) == pytest.approx(49.5)
    assert run_percentage("done", vectors) == 100


def test_messages_name_the_current_work_and_eta_follows_the_rate() -> None:
    now = [0.0]
    tracker = RunProgress(clock=lambda: now[0])
    tracker.counts.files_scanned = 10
    tracker("scanning", 10, 10)
    assert tracker.snapshot().message == "Scanned 10 files"
    assert tracker.snapshot().eta_seconds is None
    tracker.counts.files_to_index = 10
    tracker("chunking", 0, 10)
    tracker.counts.files_chunked = 5
    now[0] = 10.0
    tracker("chunking", 5, 10)
    snap = tracker.snapshot()
    assert snap.message == "Chunking files: 5/10"
    # 10 s bought 10% -> 40% (30 points): 60 points left take 20 s.
    assert snap.percentage == 40
    assert snap.eta_seconds == pytest.approx(20.0)

    vectors = RunProgress(clock=lambda: now[0])
    vectors.counts.to_embed = 2000
    vectors("embedding", 0, 2000)
    vectors.counts.vectors_stored = 1000
    now[0] = 40.0
    vectors("embedding", 1000, 2000)
    snap = vectors.snapshot()
    assert snap.message == "Generating embeddings: 1000/2000"
    # 30 s bought 49.5 points: the other 50.5 take about as long.
    assert snap.percentage == 49
    assert snap.eta_seconds == pytest.approx(30.6, abs=0.1)


def test_a_resumed_job_never_goes_back() -> None:
    tracker = RunProgress(floor=60)
    tracker.counts.files_scanned = 3
    tracker("scanning", 3, 3)
    assert tracker.percentage == 60
