"""``tasks``: the MCP tools ``list_tasks``, ``get_task``, ``create_task`` and ``update_task``."""

from __future__ import annotations

import argparse
import shlex

from rich.console import Console

from codebase_mcp_search.core.models import Task, TaskQuery
from codebase_mcp_search.entrypoints.cli.admin import when
from codebase_mcp_search.entrypoints.cli.common import Run, open_project
from codebase_mcp_search.entrypoints.cli.errors import EXIT_OK
from codebase_mcp_search.entrypoints.cli.views import (
    columns,
    dump,
    page_footer,
    task_view,
    tasks_view,
)
from codebase_mcp_search.entrypoints.facade import open_workspaces


def print_task(task: Task, out: Console) -> None:
    def line(key: str, value: object) -> None:
        out.print(f"{key:<11} {value}", highlight=False, markup=False)

    line("id", task.id)
    line("title", task.title)
    line("status", task.status.value)
    line("created", when(task.created_at))
    line("updated", when(task.updated_at))
    if task.completed_at is not None:
        line("completed", when(task.completed_at))
    for key, values in (
        ("branches", task.branches),
        ("commits", task.commits),
        ("references", task.planning_references),
    ):
        if values:
            line(key, ", ".join(values))
    for key, text in (("description", task.description), ("notes", task.notes)):
        if text:
            out.print(f"\n{key}:", highlight=False, markup=False)
            for row in text.splitlines() or [""]:
                out.print(f"  {row}", highlight=False, markup=False)


def _filters_text(a: argparse.Namespace) -> str:
    """``tasks list``'s filters as typed: ``--status 'in progress', --branch main``."""
    given = [(flag, getattr(a, flag[2:], None)) for flag in ("--status", "--branch")]
    return ", ".join(f"{flag} {shlex.quote(value)}" for flag, value in given if value)


async def tasks_command(run: Run) -> int:
    a = run.args
    action = a.action or "list"
    if action == "list":
        query = TaskQuery.build(status=a.status, branch=a.branch, limit=a.limit, offset=a.offset)
    async with open_workspaces(run.settings) as ws:
        # create_task creates its project; the other task tools do not.
        cb = await open_project(ws, a.project, create=action == "create")
        if action == "list":
            page = await cb.tasks.list(query)
            filtered = _filters_text(a)
            if filtered and not page.total_count:  # how many the filters left out
                unfiltered = (await cb.tasks.list(TaskQuery.build(limit=1))).total_count
        elif action == "get":
            task = await cb.tasks.get(a.task_id)
        elif action == "create":
            task = await cb.tasks.create(
                a.title, description=a.description, notes=a.notes, planning_references=a.ref
            )
        else:
            task = await cb.tasks.update(
                a.task_id,
                title=a.title,
                description=a.description,
                notes=a.notes,
                status=a.status,
                branch=a.branch,
                commit=a.commit,
            )
    if action != "list":
        if a.json:
            dump(task_view(task))
        else:
            print_task(task, run.out)
        return EXIT_OK
    if a.json:
        dump(tasks_view(page, query.page.offset, a.full))
        return EXIT_OK
    if not page.tasks:
        if page.total_count:
            line = f"No tasks past --offset {query.page.offset} in project {cb.project_id!r}."
        elif filtered and unfiltered:
            line = (
                f"No tasks with {filtered} in project {cb.project_id!r} (it has {unfiltered}; "
                "'codebase-mcp tasks' lists them)."
            )
        elif filtered:
            line = f"No tasks with {filtered}: project {cb.project_id!r} has no tasks."
        else:
            line = f"No tasks in project {cb.project_id!r}."
        run.out.print(line, highlight=False, markup=False)
        return EXIT_OK
    if a.full:
        for i, task in enumerate(page.tasks):
            if i:
                run.out.print("")
            print_task(task, run.out)
    else:
        rows = [(t.id, t.status.value, when(t.updated_at), t.title) for t in page.tasks]
        run.out.print(
            columns(("id", "status", "updated", "title"), rows), highlight=False, markup=False
        )
    footer = page_footer(query.page.offset, len(page.tasks), page.total_count, "tasks")
    run.out.print(footer, highlight=False, markup=False)
    return EXIT_OK
