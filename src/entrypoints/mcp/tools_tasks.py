"""Task tracker tools: create_task, get_task, update_task, list_tasks.

Statuses are an enum in the schema holding the aliases ``pending`` / ``completed`` of the
other task contract in our references (``TaskStatus.parse`` maps them), so a client that
checks arguments against the schema may send them; an unknown one is ``INVALID_STATUS`` with
the valid values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import Context, FastMCP
from pydantic import Field

from codebase_mcp_search.core.defaults import (
    DEFAULT_TASK_PAGE,
    MAX_BRANCH_CHARS,
    MAX_DESCRIPTION,
    MAX_NOTES,
    MAX_OFFSET,
    MAX_REFERENCE_CHARS,
    MAX_REFERENCES,
    MAX_TASK_PAGE,
    MAX_TITLE,
)
from codebase_mcp_search.core.models import Task, TaskQuery, TaskSummary
from codebase_mcp_search.entrypoints.mcp.errors import coded
from codebase_mcp_search.entrypoints.mcp.listing import READ_ONLY, writes
from codebase_mcp_search.entrypoints.mcp.state import state_of
from codebase_mcp_search.entrypoints.mcp.tools_code import ProjectId

# The values of ``TaskStatus``, then its aliases (a test checks they agree).
TaskStatusName = Literal["need to be done", "in-progress", "complete", "pending", "completed"]
STATUS_HELP = "'pending' and 'completed' are aliases."
TITLE_HELP = "A short summary of the work."
DESCRIPTION_HELP = "What to do and why."
NOTES_HELP = "Working notes: findings, decisions, next steps."
TaskId = Annotated[str, Field(description="Id from create_task or list_tasks.")]


def task_payload(task: Task) -> dict[str, Any]:
    return task.model_dump(mode="json")


def summary_payload(task: Task) -> dict[str, Any]:
    """Exactly id, title, status, created_at and updated_at."""
    return TaskSummary(
        id=task.id,
        title=task.title,
        status=task.status,
        created_at=task.created_at,
        updated_at=task.updated_at,
    ).model_dump(mode="json")


def register_task_tools(mcp: FastMCP[Any]) -> None:
    """Add the task tracker tools to ``mcp``."""

    @mcp.tool(annotations=writes(destructive=False, idempotent=False), output_schema=None)
    async def create_task(
        title: Annotated[str, Field(description=TITLE_HELP, min_length=1, max_length=MAX_TITLE)],
        ctx: Context,
        description: Annotated[
            str | None, Field(description=DESCRIPTION_HELP, max_length=MAX_DESCRIPTION)
        ] = None,
        notes: Annotated[str | None, Field(description=NOTES_HELP, max_length=MAX_NOTES)] = None,
        planning_references: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_REFERENCE_CHARS)]] | None,
            Field(
                description="Paths or URLs of plans it follows.",
                max_length=MAX_REFERENCES,
            ),
        ] = None,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Create a development task (status 'need to be done'); returns the task."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id)
            task = await cb.tasks.create(
                title,
                description=description,
                notes=notes,
                planning_references=planning_references,
            )
        return task_payload(task)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def get_task(
        task_id: TaskId, ctx: Context, project_id: ProjectId = None
    ) -> dict[str, Any]:
        """One task in full, with its notes, branches and commits."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            task = await cb.tasks.get(task_id)
        return task_payload(task)

    # Destructive: a new title, description or notes replaces the old text.
    @mcp.tool(annotations=writes(destructive=True, idempotent=True), output_schema=None)
    async def update_task(
        task_id: TaskId,
        ctx: Context,
        title: Annotated[
            str | None, Field(description=TITLE_HELP, min_length=1, max_length=MAX_TITLE)
        ] = None,
        description: Annotated[
            str | None, Field(description=DESCRIPTION_HELP, max_length=MAX_DESCRIPTION)
        ] = None,
        notes: Annotated[str | None, Field(description=NOTES_HELP, max_length=MAX_NOTES)] = None,
        status: Annotated[TaskStatusName | None, Field(description=STATUS_HELP)] = None,
        branch: Annotated[
            str | None,
            Field(
                description="A git branch to link.",
                min_length=1,
                max_length=MAX_BRANCH_CHARS,
            ),
        ] = None,
        commit: Annotated[
            str | None,
            Field(
                description="A commit SHA to link.",
                pattern="^[0-9a-f]{40}$",
            ),
        ] = None,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Change some fields of a task (at least one); branch and commit are added to its
        lists. Returns the task."""
        state = state_of(ctx)
        with coded():
            cb = await state.workspaces.codebase(project_id, create=False)
            task = await cb.tasks.update(
                task_id,
                title=title,
                description=description,
                notes=notes,
                status=status,
                branch=branch,
                commit=commit,
            )
        return task_payload(task)

    @mcp.tool(annotations=READ_ONLY, output_schema=None)
    async def list_tasks(
        ctx: Context,
        status: Annotated[
            TaskStatusName | None, Field(description="Only this status. " + STATUS_HELP)
        ] = None,
        branch: Annotated[
            str | None,
            Field(description="Only tasks linked to this branch.", max_length=MAX_BRANCH_CHARS),
        ] = None,
        limit: Annotated[
            int, Field(description="Page size.", ge=1, le=MAX_TASK_PAGE, strict=True)
        ] = DEFAULT_TASK_PAGE,
        offset: Annotated[
            int,
            Field(description="Tasks to skip.", ge=0, le=MAX_OFFSET, strict=True),
        ] = 0,
        full_details: Annotated[
            bool,
            Field(
                description="Full tasks, not summaries.",
                strict=True,
            ),
        ] = False,
        project_id: ProjectId = None,
    ) -> dict[str, Any]:
        """Tasks newest first (id, title, status), with total_count and has_more."""
        state = state_of(ctx)
        with coded():
            query = TaskQuery.build(status=status, branch=branch, limit=limit, offset=offset)
            cb = await state.workspaces.codebase(project_id, create=False)
            page = await cb.tasks.list(query)
        shape = task_payload if full_details else summary_payload
        return {
            "success": True,
            "tasks": [shape(t) for t in page.tasks],
            "total_count": page.total_count,
            "has_more": offset + len(page.tasks) < page.total_count,
        }
