"""TaskService: create, read, update and list development tasks.

Field rules live in the validators of the ``Task`` and ``TaskUpdate`` models
(``core.models.tasks``): the service builds tasks and updates through them, which raise the
coded errors; how an update changes a task is ``TaskUpdate.applied_to``, which each store
applies atomically.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime

from codebase_mcp_search.core.errors import Hint
from codebase_mcp_search.core.models import (
    Task,
    TaskPage,
    TaskQuery,
    TaskStatus,
    TaskUpdate,
    utcnow,
)
from codebase_mcp_search.core.models.base import check_uuid
from codebase_mcp_search.core.ports import TaskRepo

Clock = Callable[[], datetime]


class TaskService:
    """Task use cases over a TaskRepo. Status may move freely between the three values;
    ``completed_at`` is set on entering ``complete`` and cleared on leaving it."""

    def __init__(self, repo: TaskRepo, clock: Clock = utcnow) -> None:
        self._repo = repo
        self._clock = clock

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
        """Change the fields given (None: unchanged; at least one, else ``ValidationFailed``
        on ``fields``); ``branch`` and ``commit`` are appended idempotently. The store applies
        the change atomically, so concurrent updates of the task lose none of each other's
        writes."""
        tid = _check_id(task_id)
        change = TaskUpdate.build(
            title=title,
            description=description,
            notes=notes,
            status=status,
            branch=branch,
            commit=commit,
        )
        return await self._repo.update(tid, change, self._clock())

    async def list(self, query: TaskQuery | None = None) -> TaskPage:
        """Tasks newest first, with the total number of matches before paging."""
        q = query or TaskQuery()
        return await self._repo.list(
            status=q.status, branch=q.branch, limit=q.page.limit, offset=q.page.offset
        )


def _check_id(task_id: str) -> str:
    return check_uuid(task_id, "task_id", "a task id", Hint.TASK_ID)
