"""The ``TaskRepo`` port: persistent development tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models import Task, TaskPage, TaskStatus, TaskUpdate


@runtime_checkable
class TaskRepo(Protocol):
    """Persistent development tasks.

    Contract: ``add`` stores a new task (its id must be new); ``get`` and ``update`` raise
    ``TaskNotFound`` for an unknown id; ``list`` returns tasks newest first (created_at
    descending, then id) filtered by status and branch membership, with the total number of
    matches before ``limit``/``offset``. Infrastructure failures raise ``StoreUnavailable``.

    ``update`` is atomic against every other update of the task, from any process: it applies
    the change to the task as stored when it runs (``TaskUpdate.applied_to``), writing only what
    the change sets, so concurrent updates lose none of one another's fields, branches or
    commits.
    """

    async def add(self, task: Task) -> None:
        """Store a new task."""
        ...

    async def get(self, task_id: str) -> Task:
        """The task with this id."""
        ...

    async def update(self, task_id: str, change: TaskUpdate, now: datetime) -> Task:
        """Apply ``change``, made at ``now``, to the stored task; the task as written."""
        ...

    async def list(
        self,
        *,
        status: TaskStatus | None = None,
        branch: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> TaskPage:
        """A page of tasks, newest first."""
        ...
