"""InMemoryTaskRepo: the reference TaskRepo, tasks held in a dict."""

from __future__ import annotations

from datetime import datetime

from codebase_mcp_search.core.errors import TaskNotFound, ValidationFailed
from codebase_mcp_search.core.models import Task, TaskPage, TaskStatus, TaskUpdate


class InMemoryTaskRepo:
    """Process-local TaskRepo over a dict keyed by task id."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    async def add(self, task: Task) -> None:
        if task.id in self._tasks:
            raise ValidationFailed("id", task.id, "a task with this id already exists")
        self._tasks[task.id] = task

    async def get(self, task_id: str) -> Task:
        return self._stored(task_id)

    def _stored(self, task_id: str) -> Task:
        task = self._tasks.get(task_id)
        if task is None:
            raise TaskNotFound(f"Task not found: {task_id}", task_id=task_id)
        return task

    async def update(self, task_id: str, change: TaskUpdate, now: datetime) -> Task:
        # Read, apply and write with no await between, so no other update (another task of the
        # event loop) runs in between; the store is never shared across threads or processes.
        updated = change.applied_to(self._stored(task_id), now)
        self._tasks[task_id] = updated
        return updated

    async def list(
        self,
        *,
        status: TaskStatus | None = None,
        branch: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> TaskPage:
        matches = [
            t
            for t in self._tasks.values()
            if (status is None or t.status is status) and (branch is None or branch in t.branches)
        ]
        # Newest first; the id breaks ties between tasks created in the same microsecond.
        matches.sort(key=lambda t: (t.created_at, t.id), reverse=True)
        return TaskPage(tasks=matches[offset : offset + limit], total_count=len(matches))
