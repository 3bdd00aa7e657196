"""The watching service over the in-memory adapters: which changes call for a run, when a burst
is due, and that a burst is one job on the queue (issue 37)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from codebase_mcp_search.adapters.filesystem import PathspecIgnoreRules
from codebase_mcp_search.adapters.memory import (
    InMemoryChangeSource,
    InMemoryJobQueue,
    InMemoryWatchClaims,
)
from codebase_mcp_search.core.models import JobOutcome, JobQuery, JobStatus
from codebase_mcp_search.core.models.watching import ChangeKind, FileChange
from codebase_mcp_search.core.policies import IgnoreFiles, SkipPolicy
from codebase_mcp_search.core.services import JobService
from codebase_mcp_search.core.services.watching import Burst, WatchConfig, Watching, relevant

POLICY = SkipPolicy()
NO_IGNORES = IgnoreFiles()
ROOT = "/repos/app"
FAST = WatchConfig(quiet_s=0.05, max_delay_s=5.0, git_busy_max_s=5.0, recheck_s=0.05, retry_s=0.02)


def changed(*paths: str, kind: ChangeKind = ChangeKind.MODIFIED) -> list[FileChange]:
    return [FileChange(kind, p) for p in paths]


@pytest.mark.parametrize(
    ("rel", "matters"),
    [
        ("src/app.py", True),
        ("README.md", True),
        (".git/HEAD", True),  # a branch switched
        (".git/index", False),
        (".git/objects/ab/cdef", False),
        (".git/refs/heads/main", False),
        ("node_modules/left-pad/index.js", False),
        ("vendor/.git/config", False),
        ("package-lock.json", False),
        ("dist/app.min.js", False),
        ("build/out.py", False),  # ignored by the root's .gitignore below
        ("notes.log", False),
    ],
)
def test_which_changes_call_for_a_run(rel: str, matters: bool) -> None:
    gitignore = PathspecIgnoreRules().compile(["build/", "*.log"])
    ignores = IgnoreFiles().entering(None, gitignore)
    assert relevant(rel, POLICY, ignores) is matters


def test_a_burst_is_due_once_quiet_or_at_the_latest_after_the_max_delay() -> None:
    config = WatchConfig(quiet_s=1.0, max_delay_s=10.0, git_busy_max_s=60.0)
    burst = Burst(config)
    assert burst.due_in(0.0) is None
    assert burst.note(changed(".git/objects/x"), 0.0, POLICY, NO_IGNORES) == 0
    assert burst.due_in(0.0) is None  # nothing that matters: no run
    burst.note(changed("a.py"), 0.0, POLICY, NO_IGNORES)
    assert burst.due_in(0.5) == pytest.approx(0.5)
    for t in range(1, 12):  # never quiet: due at the max delay
        burst.note(changed(f"f{t}.py"), t * 0.9, POLICY, NO_IGNORES)
    assert burst.due_in(9.9) == pytest.approx(0.1)
    burst.clear()
    assert burst.due_in(100.0) is None


def test_a_due_burst_waits_while_git_holds_its_index_lock() -> None:
    burst = Burst(WatchConfig(quiet_s=1.0, max_delay_s=10.0, git_busy_max_s=60.0))
    burst.note(changed("a.py", "b.py"), 0.1, POLICY, NO_IGNORES)
    assert burst.due_in(30.0) == 0.0
    assert burst.held_by_git(True, 30.0)
    assert burst.held_by_git(True, 60.0)  # held since 30.0
    assert not burst.held_by_git(False, 61.0)  # released: the run goes
    assert burst.held_by_git(True, 62.0)  # taken again: held anew
    assert not burst.held_by_git(True, 122.0)  # a lock left behind holds nothing for ever


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    deadline = time.monotonic() + 10
    while not await check():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)


async def test_a_burst_of_thousands_of_changes_is_one_job() -> None:
    queue = InMemoryJobQueue()
    jobs = JobService(queue)
    source = InMemoryChangeSource()
    source.add(ROOT)
    claims = InMemoryWatchClaims()

    async def targets() -> list[tuple[str, str]]:
        return [("p", ROOT)]

    async def ignores_of(_root: str) -> IgnoreFiles:
        return NO_IGNORES

    watching = Watching(
        targets=targets,
        source=source,
        claims=claims,
        jobs=jobs,
        policy=POLICY,
        ignores_of=ignores_of,
        config=FAST,
    )

    async def listed() -> list[str]:
        page = await jobs.list(JobQuery.build(project_id="p", limit=100))
        return [j.id for j in page.jobs]

    task = asyncio.create_task(watching.run())
    try:

        async def watched() -> bool:
            return bool(source.streams.get(ROOT)) and len(await listed()) == 1

        await eventually(watched)  # the catch-up job of a watch's start
        assert claims.held() == {("p", ROOT)}
        assert watching.state("p", ROOT).mode is not None
        [catch_up] = await listed()

        # A checkout of 5,000 files, reported in batches: the pending job covers them all.
        for start in range(0, 5000, 500):
            source.report(ROOT, changed(*(f"src/m{i}.py" for i in range(start, start + 500))))
        await asyncio.sleep(FAST.quiet_s * 4)
        assert await listed() == [catch_up]

        # The job runs: a burst now is the next job, queued once the running one ends.
        held = await queue.claim("w", 60.0)
        assert held is not None and held.id == catch_up
        source.report(ROOT, changed("src/m1.py", "src/m2.py"))
        await asyncio.sleep(FAST.quiet_s * 4)
        assert await listed() == [catch_up]  # not beside the running one
        await queue.finish(catch_up, "w", JobOutcome(status=JobStatus.COMPLETED))

        async def next_queued() -> bool:
            return len(await listed()) == 2

        await eventually(next_queued)
        source.report(ROOT, changed(".git/objects/aa/bb", "node_modules/x/y.js"))
        await asyncio.sleep(FAST.quiet_s * 4)
        assert len(await listed()) == 2  # what never matters queues nothing

        # While git holds its index lock, a burst waits for it, however long it lasts.
        [second, _] = await listed()
        assert await queue.claim("w", 60.0) is not None
        await queue.finish(second, "w", JobOutcome(status=JobStatus.COMPLETED))
        source.files.add((ROOT, ".git/index.lock"))
        source.report(ROOT, changed("src/a.py"))
        await asyncio.sleep(FAST.quiet_s * 4 + FAST.max_delay_s / 10)
        assert len(await listed()) == 2
        source.files.discard((ROOT, ".git/index.lock"))

        async def after_git() -> bool:
            return len(await listed()) == 3

        await eventually(after_git)

        # The root goes away: its watch ends and its claim is given up.
        source.remove(ROOT)

        async def dropped() -> bool:
            return not claims.held()

        await eventually(dropped)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
