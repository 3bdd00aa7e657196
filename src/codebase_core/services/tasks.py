"""TaskService: create, read, update and list development tasks.

Field rules live in the ``Task`` model's validators (``core.models.tasks``): the
service builds and updates tasks through the model, which raises the coded errors.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from codebase_mcp_search.core.errors import Hint
from codebase_mcp_search.core.models import Task, TaskPage, TaskQuery, TaskStatus, utcnow
from codebase_mcp_search.core.models.base import check_uuid
from codebase_mcp_search.core.ports import TaskRepo

Clock = Callable[[], datetime]


class TaskService:
    """Task use cases over a TaskRepo. Status may move freely between the three values;
    ``completed_at`` is set on entering ``complete`` and cleared on leaving it."""

    def __init__(self, repo: TaskRepo, clock: Clock = utcnow) -> None:
        self._repo = repo
        self._clock = clock

    def _now_after(self, previous: datetime) -> datetime:
        # updated_at always moves forward, even when the clock does not (or steps back).
        now = self._clock()
        return now if now > previous else previous + timedelta(microseconds=1)

    async def create(
        self,
        title: str,
        description: str | None = None,
        notes: str | None = None,
        planning_references: list[str] | None = None,
    ) -> Task:
        """A new task with status ``need to be done``."""
        now = self._clock()
        task = Task(
            id=str(uuid.uuid4()),
            title=title,
            description=description,
            notes=notes,
            planning_references=planning_references,
            created_at=now,
            updated_at=now,
        )
        await self._repo.add(task)
        return task

    async def get(self, task_id: str) -> Task:
        """The task, or ``TaskNotFound``."""
        return await self._repo.get(_check_id(task_id))

    async def update(
        self,
        task_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        notes: str | None = None,
        status: str | TaskStatus | None = None,
        branch: str | None = None,
        commit: str | None = None,
    ) -> Task:
        """Apply a partial update; ``branch`` and ``commit`` are appended idempotently."""
        task = await self._repo.get(_check_id(task_id))
        edits: dict[str, object] = {
            name: value
            for name, value in (("title", title), ("description", description), ("notes", notes))
            if value is not None
        }
        if branch is not None and branch not in task.branches:
            edits["branches"] = [*task.branches, branch]
        if commit is not None and commit not in task.commits:
            edits["commits"] = [*task.commits, commit]
        # The edited fields are checked before the status is parsed: a request breaking a
        # field rule and giving an unknown status is told about the field.
        edited = Task.model_validate({**task.model_dump(), **edits})
        now = self._now_after(task.updated_at)
        changes: dict[str, object] = {"updated_at": now}
        if status is not None:
            new_status = TaskStatus.parse(status)
            changes["status"] = new_status
            if new_status is TaskStatus.COMPLETE and task.status is not TaskStatus.COMPLETE:
                changes["completed_at"] = now
            elif new_status is not TaskStatus.COMPLETE:
                changes["completed_at"] = None
        updated = Task.model_validate({**edited.model_dump(), **changes})
        await self._repo.update(updated)
        return updated

    async def list(self, query: TaskQuery | None = None) -> TaskPage:
        """Tasks newest first, with the total number of matches before paging."""
        q = query or TaskQuery()
        return await self._repo.list(
            status=q.status, branch=q.branch, limit=q.page.limit, offset=q.page.offset
        )


def _check_id(task_id: str) -> str:
    return check_uuid(task_id, "task_id", "a task id", Hint.TASK_ID)
