"""TaskRepo contract: every adapter must pass every test here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from codebase_mcp_search.core.errors import TaskNotFound
from codebase_mcp_search.core.models import Task, TaskStatus
from codebase_mcp_search.core.ports import TaskRepo

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
    task = _task(1)
    await task_repo.add(task)
    assert await task_repo.get(task.id) == task
    changed = task.model_copy(
        update={
            "title": "Renamed",
            "status": TaskStatus.COMPLETE,
            "commits": ["a" * 40],
            "branches": ["feat/x"],
            "planning_references": ["docs/plan.md"],
            "notes": "n" * 5000,
            "completed_at": T0 + timedelta(hours=1),
            "updated_at": T0 + timedelta(hours=1),
        }
    )
    await task_repo.update(changed)
    assert await task_repo.get(task.id) == changed


async def test_unknown_ids(task_repo: TaskRepo) -> None:
    with pytest.raises(TaskNotFound):
        await task_repo.get("00000000-0000-4000-8000-999999999999")
    with pytest.raises(TaskNotFound):
        await task_repo.update(_task(7))


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
