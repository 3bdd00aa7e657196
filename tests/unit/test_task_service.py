"""TaskService rules, with the in-memory TaskRepo."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.memory import InMemoryTaskRepo
from codebase_mcp_search.core.errors import (
    Hint,
    InvalidLimit,
    InvalidStatus,
    TaskNotFound,
    ValidationFailed,
)
from codebase_mcp_search.core.models import TaskQuery, TaskStatus
from codebase_mcp_search.core.services import TaskService

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def service() -> TaskService:
    return TaskService(InMemoryTaskRepo())


async def test_create_defaults(service: TaskService) -> None:
    task = await service.create("Add search", description="d", planning_references=["plan.md"])
    assert task.status is TaskStatus.NEED_TO_BE_DONE
    assert task.created_at == task.updated_at and task.completed_at is None
    assert await service.get(task.id) == task


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "ok", "description": "x" * 2001}, "description"),
        ({"title": "ok", "notes": "x" * 5001}, "notes"),
        ({"title": "ok", "planning_references": ["r"] * 11}, "planning_references"),
        ({"title": "ok", "planning_references": ["x" * 501]}, "planning_references"),
    ],
)
async def test_create_rejects_bad_fields(service: TaskService, kwargs: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationFailed) as err:
        await service.create(**kwargs)
    assert err.value.field == field and field in str(err.value)
    assert err.value.code == "VALIDATION_ERROR"


async def test_limits_are_inclusive(service: TaskService) -> None:
    task = await service.create(
        "x" * 200, description="d" * 2000, notes="n" * 5000, planning_references=["r" * 500] * 10
    )
    assert len(task.title) == 200


async def test_update_appends_idempotently_and_tracks_completion(service: TaskService) -> None:
    task = await service.create("t")
    t1 = await service.update(task.id, branch="feat/a", commit=SHA, status="in-progress")
    t2 = await service.update(task.id, branch="feat/a", commit=SHA, status="complete")
    assert t2.branches == ["feat/a"] and t2.commits == [SHA]
    assert t2.completed_at is not None and t2.updated_at > t1.updated_at > task.updated_at
    t3 = await service.update(task.id, status="pending")
    assert t3.status is TaskStatus.NEED_TO_BE_DONE and t3.completed_at is None


async def test_update_errors(service: TaskService) -> None:
    task = await service.create("t")
    with pytest.raises(
        InvalidStatus,
        match=r"Invalid status: invalid-status\. Valid values: "
        r"\['need to be done', 'in-progress', 'complete'\]",
    ):
        await service.update(task.id, status="invalid-status")
    with pytest.raises(ValidationFailed, match="commit"):
        await service.update(task.id, commit=SHA.upper())
    with pytest.raises(ValidationFailed, match="branch"):
        await service.update(task.id, branch="has space")
    with pytest.raises(TaskNotFound):
        await service.update("0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77", title="x")
    with pytest.raises(ValidationFailed, match="task_id"):
        await service.update("nope", title="x")
    assert await service.get(task.id) == task  # nothing half-applied


async def test_an_update_that_changes_nothing_is_refused(service: TaskService) -> None:
    """No field given is bad input naming what an update sets, not a silent bump of
    updated_at; a blank title is refused, not read as "keep the title"."""
    task = await service.create("t")
    with pytest.raises(ValidationFailed) as err:
        await service.update(task.id)
    assert err.value.field == "fields" and err.value.hint is Hint.TASK_FIELDS
    assert str(err.value) == (
        "VALIDATION_ERROR: fields=[]: no field to change "
        "(title, description, notes, status, branch, commit)"
    )
    for blank in ("", "   "):
        with pytest.raises(ValidationFailed, match="title"):
            await service.update(task.id, title=blank)
    assert await service.get(task.id) == task


async def test_error_messages_name_field_value_and_rule(service: TaskService) -> None:
    task = await service.create("t")
    with pytest.raises(ValidationFailed) as err:
        await service.update(task.id, branch="has space")
    assert str(err.value) == (
        "VALIDATION_ERROR: branch='has space': must be a git branch name: 1-255 chars, no spaces"
    )
    with pytest.raises(ValidationFailed) as err:
        await service.create("ok", description="d" * 2001)
    assert str(err.value).endswith(": must be at most 2000 characters, got 2001")


async def test_a_broken_field_rule_is_reported_before_an_unknown_status(
    service: TaskService,
) -> None:
    task = await service.create("t")
    for fields in ({"title": ""}, {"branch": "has space"}, {"commit": "abc"}):
        with pytest.raises(ValidationFailed):
            await service.update(task.id, status="invalid-status", **fields)
    assert await service.get(task.id) == task


async def test_list_validates_and_aliases(service: TaskService) -> None:
    for i in range(3):
        await service.create(f"t{i}")
    with pytest.raises(InvalidLimit, match="Limit must be between 1 and 100, got 150"):
        TaskQuery.build(limit=150)
    with pytest.raises(InvalidStatus):
        TaskQuery.build(status="done")
    page = await service.list(TaskQuery.build(status="pending", limit=2))
    assert page.total_count == 3 and [t.title for t in page.tasks] == ["t2", "t1"]
    assert (await service.list(TaskQuery.build(status="completed"))).total_count == 0


class _FrozenClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["need to be done", "in-progress", "complete", "pending", "completed"]),
        max_size=12,
    )
)
async def test_status_transitions_keep_invariants(statuses: list[str]) -> None:
    clock = _FrozenClock()  # a clock that never advances: updated_at must still move forward
    service = TaskService(InMemoryTaskRepo(), clock=clock)
    task = await service.create("t")
    previous = task
    for s in statuses:
        task = await service.update(task.id, status=s)
        assert task.updated_at > previous.updated_at
        assert (task.completed_at is not None) == (task.status is TaskStatus.COMPLETE)
        if previous.status is TaskStatus.COMPLETE and task.status is TaskStatus.COMPLETE:
            assert task.completed_at == previous.completed_at
        previous = task
