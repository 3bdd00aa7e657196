"""TaskRepo contract: every adapter must pass every test here."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from codebase_mcp_search.core.errors import TaskNotFound
from codebase_mcp_search.core.models import Task, TaskStatus, TaskUpdate
from codebase_mcp_search.core.ports import TaskRepo
from codebase_mcp_search.core.services import TaskService
from tests.contract.task_clients import Script, TaskClients

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _task(
    n: int, status: TaskStatus = TaskStatus.NEED_TO_BE_DONE, branches: list[str] | None = None
) -> Task:
    at = T0 + timedelta(minutes=n)
    return Task(
        id=f"00000000-0000-4000-8000-{n:012d}",
        title=f"Task {n}",
        status=status,
        branches=branches or [],
        created_at=at,
        updated_at=at,
    )


def test_is_a_task_repo(task_repo: TaskRepo) -> None:
    assert isinstance(task_repo, TaskRepo)


async def test_add_get_update(task_repo: TaskRepo) -> None:
    task = _task(1).model_copy(update={"description": "d", "planning_references": ["docs/plan.md"]})
    await task_repo.add(task)
    assert await task_repo.get(task.id) == task
    at = T0 + timedelta(hours=1)
    change = TaskUpdate.build(
        title="Renamed", status="complete", commit="a" * 40, branch="feat/x", notes="n" * 5000
    )
    written = await task_repo.update(task.id, change, at)
    assert written == task.model_copy(
        update={
            "title": "Renamed",
            "status": TaskStatus.COMPLETE,
            "commits": ["a" * 40],
            "branches": ["feat/x"],
            "notes": "n" * 5000,
            "completed_at": at,
            "updated_at": at,
        }
    )
    assert await task_repo.get(task.id) == written


async def test_an_update_writes_what_the_core_decides(task_repo: TaskRepo) -> None:
    """Only the fields set change; a branch or commit already there is not added again, a new
    one goes last; completed_at follows complete; updated_at moves forward even when the clock
    steps back. Each store writes what ``TaskUpdate.applied_to`` makes of the stored task."""
    task = _task(2, branches=["main"])
    await task_repo.add(task)
    steps = [
        (TaskUpdate.build(notes="first"), T0 + timedelta(hours=1)),
        (TaskUpdate.build(branch="main", commit="b" * 40), T0 + timedelta(hours=2)),
        (TaskUpdate.build(branch="feat/y", commit="c" * 40), T0 + timedelta(hours=3)),
        (TaskUpdate.build(commit="b" * 40, status="complete"), T0 + timedelta(hours=4)),
        (TaskUpdate.build(description="later", status="complete"), T0 + timedelta(hours=5)),
        (TaskUpdate.build(title="Clock behind"), T0),  # the clock stepped back
        (TaskUpdate.build(status="in-progress"), T0 + timedelta(hours=6)),
    ]
    for change, now in steps:
        expected = change.applied_to(await task_repo.get(task.id), now)
        assert await task_repo.update(task.id, change, now) == expected
        assert await task_repo.get(task.id) == expected
    final = await task_repo.get(task.id)
    assert final.branches == ["main", "feat/y"] and final.commits == ["b" * 40, "c" * 40]
    assert (final.title, final.description, final.notes) == ("Clock behind", "later", "first")
    assert final.status is TaskStatus.IN_PROGRESS and final.completed_at is None
    assert final.updated_at == T0 + timedelta(hours=6)


async def test_completion_time_is_kept_while_complete(task_repo: TaskRepo) -> None:
    task = _task(3)
    await task_repo.add(task)
    done = await task_repo.update(
        task.id, TaskUpdate.build(status="complete"), T0 + timedelta(hours=1)
    )
    again = await task_repo.update(
        task.id, TaskUpdate.build(status="completed"), T0 + timedelta(hours=2)
    )
    assert done.completed_at == again.completed_at == T0 + timedelta(hours=1)
    assert again.updated_at == T0 + timedelta(hours=2)
    # A clock that stands still: updated_at still moves, by the smallest step a store keeps.
    same = await task_repo.update(task.id, TaskUpdate.build(notes="n"), T0 + timedelta(hours=2))
    assert same.updated_at == T0 + timedelta(hours=2, microseconds=1)


async def test_unknown_ids(task_repo: TaskRepo) -> None:
    with pytest.raises(TaskNotFound):
        await task_repo.get("00000000-0000-4000-8000-999999999999")
    with pytest.raises(TaskNotFound):
        await task_repo.update(_task(7).id, TaskUpdate.build(notes="n"), T0)


async def test_list_newest_first_filters_and_pages(task_repo: TaskRepo) -> None:
    for n in range(1, 8):
        status = TaskStatus.IN_PROGRESS if n % 2 else TaskStatus.NEED_TO_BE_DONE
        await task_repo.add(_task(n, status, ["main"] if n > 4 else ["dev"]))
    page = await task_repo.list(limit=3)
    assert [t.title for t in page.tasks] == ["Task 7", "Task 6", "Task 5"]
    assert page.total_count == 7
    page = await task_repo.list(limit=3, offset=6)
    assert [t.title for t in page.tasks] == ["Task 1"] and page.total_count == 7
    page = await task_repo.list(status=TaskStatus.IN_PROGRESS)
    assert [t.title for t in page.tasks] == ["Task 7", "Task 5", "Task 3", "Task 1"]
    page = await task_repo.list(status=TaskStatus.IN_PROGRESS, branch="dev")
    assert [t.title for t in page.tasks] == ["Task 3", "Task 1"] and page.total_count == 2
    page = await task_repo.list(status=TaskStatus.COMPLETE)
    assert page.tasks == [] and page.total_count == 0


CLIENTS = 6
STEPS = 8


def _sha(client: int, step: int) -> str:
    return hashlib.sha1(f"{client}-{step}".encode()).hexdigest()


def _scripts() -> list[Script]:
    """Each client adds a branch and a commit of its own at every step; client 0 also writes
    notes, 1 the description, 2 the title, 3 the status (ending ``complete``); 4 and 5 add the
    same branches (``shared/<step>``), each to be kept once."""
    scripts: list[Script] = []
    for c in range(CLIENTS):
        script: Script = []
        for k in range(STEPS):
            fields: dict[str, str] = {
                "branch": f"shared/{k}" if c >= 4 else f"c{c}/{k}",
                "commit": _sha(c, k),
            }
            if c == 0:
                fields["notes"] = f"notes {k}"
            elif c == 1:
                fields["description"] = f"description {k}"
            elif c == 2:
                fields["title"] = f"title {k}"
            elif c == 3:
                fields["status"] = "complete" if k % 2 else "in-progress"
            script.append(fields)
        scripts.append(script)
    return scripts


def _in_order(items: list[str], expected: list[str]) -> bool:
    return [i for i in items if i in expected] == expected


@pytest.mark.slow
async def test_concurrent_updates_keep_every_write(task_clients: TaskClients) -> None:
    """Clients updating one task at once: each field keeps what its one writer wrote last,
    every branch and commit added is kept once, each client's in the order it added them."""
    service = TaskService(task_clients.repo)
    task = await service.create("concurrent")
    scripts = _scripts()
    returned = await task_clients.run(task.id, scripts)
    final = await service.get(task.id)

    assert final.title == f"title {STEPS - 1}"
    assert final.description == f"description {STEPS - 1}"
    assert final.notes == f"notes {STEPS - 1}"
    assert final.status is TaskStatus.COMPLETE and final.completed_at is not None
    branches = [f["branch"] for s in scripts for f in s]
    commits = [f["commit"] for s in scripts for f in s]
    assert sorted(final.branches) == sorted(set(branches))
    assert sorted(final.commits) == sorted(commits)
    for script in scripts:
        assert _in_order(final.branches, [f["branch"] for f in script])
        assert _in_order(final.commits, [f["commit"] for f in script])
    # Each update returned the task as it wrote it, its own additions in it, at a time of its
    # own; the last write is the task as stored.
    writes = [t for client in returned for t in client]
    assert len(writes) == CLIENTS * STEPS
    for script, client in zip(scripts, returned, strict=True):
        for fields, written in zip(script, client, strict=True):
            assert fields["branch"] in written.branches and fields["commit"] in written.commits
    assert len({t.updated_at for t in writes}) == len(writes)
    assert max(writes, key=lambda t: t.updated_at) == final
