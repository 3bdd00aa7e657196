"""Task models, and the rules their fields follow.

The rules are the functions below, run by the validators of ``Task`` and of ``TaskUpdate`` (a
request to change one): ``TaskService`` builds tasks and updates through the models. Each rule
raises the coded error a client sees (``ValidationFailed`` naming the field, the value and the
rule; ``InvalidStatus``). Pydantic collects only ``ValueError`` and ``AssertionError`` into its
``ValidationError``; the core errors derive from neither, so the first broken rule, in field
order, leaves validation as it was raised.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Self

from pydantic import Field, field_validator, model_validator

from codebase_mcp_search.core.defaults import (
    DEFAULT_TASK_PAGE,
    MAX_BRANCH_CHARS,
    MAX_DESCRIPTION,
    MAX_NOTES,
    MAX_REFERENCE_CHARS,
    MAX_REFERENCES,
    MAX_TASK_PAGE,
    MAX_TITLE,
)
from codebase_mcp_search.core.errors import Hint, InvalidStatus, ValidationFailed, shorten
from codebase_mcp_search.core.models.base import FrozenModel, Page, at_most, no_nul


class TaskStatus(StrEnum):
    NEED_TO_BE_DONE = "need to be done"
    IN_PROGRESS = "in-progress"
    COMPLETE = "complete"

    @classmethod
    def parse(cls, value: object) -> TaskStatus:
        """Accept the three values and the aliases ``pending`` and ``completed``."""
        if isinstance(value, TaskStatus):
            return value
        if isinstance(value, str):
            v = value.strip()
            alias = {"pending": cls.NEED_TO_BE_DONE, "completed": cls.COMPLETE}.get(v)
            if alias is not None:
                return alias
            for member in cls:
                if member.value == v:
                    return member
        raise InvalidStatus(
            f"Invalid status: {shorten(value)}. Valid values: {[m.value for m in cls]}",
            value=value,
        )


SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def _text(field: str, value: object, maximum: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationFailed(field, value, "must be a string")
    no_nul(field, value)
    if len(value) > maximum:
        raise ValidationFailed(
            field, value, f"must be at most {maximum} characters, got {len(value)}"
        )
    return value


def _strings(field: str, value: object) -> list[object]:
    if not isinstance(value, list):
        raise ValidationFailed(field, value, "must be a list of strings")
    return value


def _check_title(title: object) -> str:
    if not isinstance(title, str) or not title.strip():
        raise ValidationFailed(
            "title", title, f"must be a non-empty string of 1-{MAX_TITLE} characters"
        )
    if len(title) > MAX_TITLE:
        raise ValidationFailed("title", title, f"must be at most {MAX_TITLE} characters")
    no_nul("title", title)
    return title


def _check_branch(branch: object) -> str:
    """A git branch name (the error names ``branch``, as ``update`` takes one)."""
    if (
        not isinstance(branch, str)
        or not branch.strip()
        or len(branch) > MAX_BRANCH_CHARS
        or any(c.isspace() or c == "\x00" for c in branch)
    ):
        raise ValidationFailed(
            "branch", branch, f"must be a git branch name: 1-{MAX_BRANCH_CHARS} chars, no spaces"
        )
    return branch


def _check_commit(commit: object) -> str:
    """A full git SHA (the error names ``commit``, as ``update`` takes one)."""
    if not isinstance(commit, str) or not SHA_RE.match(commit):
        raise ValidationFailed("commit", commit, "must be a 40-character lowercase hex git SHA")
    return commit


class Task(FrozenModel):
    """A unit of development work. Its validators are the task rules (see the module)."""

    id: str
    title: str
    description: str | None = None
    notes: str | None = None
    status: TaskStatus = TaskStatus.NEED_TO_BE_DONE
    branches: list[str] = Field(default_factory=list)
    commits: list[str] = Field(default_factory=list)
    planning_references: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, title: object) -> object:
        return _check_title(title)

    @field_validator("description", mode="before")
    @classmethod
    def _description(cls, description: object) -> object:
        return _text("description", description, MAX_DESCRIPTION)

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, notes: object) -> object:
        return _text("notes", notes, MAX_NOTES)

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, status: object) -> object:
        return TaskStatus.parse(status)

    @field_validator("branches", mode="before")
    @classmethod
    def _branches(cls, branches: object) -> object:
        return [_check_branch(b) for b in _strings("branches", branches)]

    @field_validator("commits", mode="before")
    @classmethod
    def _commits(cls, commits: object) -> object:
        return [_check_commit(c) for c in _strings("commits", commits)]

    @field_validator("planning_references", mode="before")
    @classmethod
    def _planning_references(cls, refs: object) -> object:
        if refs is None:
            return []
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ValidationFailed("planning_references", refs, "must be a list of strings")
        if len(refs) > MAX_REFERENCES:
            raise ValidationFailed(
                "planning_references", refs, f"must hold at most {MAX_REFERENCES} items"
            )
        for r in refs:
            no_nul("planning_references", r)
            if not r.strip() or len(r) > MAX_REFERENCE_CHARS:
                raise ValidationFailed(
                    "planning_references",
                    r,
                    f"each item must be 1-{MAX_REFERENCE_CHARS} characters",
                )
        return list(refs)


TASK_FIELDS = ("title", "description", "notes", "status", "branch", "commit")
"""What an update of a task may set (its other fields follow from these, or never change)."""


class TaskUpdate(FrozenModel):
    """What one update of a task changes: each field given (None leaves it as it is), checked
    by the task rules. An update that changes nothing is refused (it would only move
    ``updated_at``): ``ValidationFailed`` on ``fields``, with the hint ``TASK_FIELDS``."""

    title: str | None = None
    description: str | None = None
    notes: str | None = None
    branch: str | None = None
    """Appended to the task's branches unless there already."""
    commit: str | None = None
    """Appended to the task's commits unless there already."""
    status: TaskStatus | None = None
    # status comes last: a request breaking a field rule and giving an unknown status is told
    # about the field.

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, title: object) -> object:
        return None if title is None else _check_title(title)

    @field_validator("description", mode="before")
    @classmethod
    def _description(cls, description: object) -> object:
        return _text("description", description, MAX_DESCRIPTION)

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, notes: object) -> object:
        return _text("notes", notes, MAX_NOTES)

    @field_validator("branch", mode="before")
    @classmethod
    def _branch(cls, branch: object) -> object:
        return None if branch is None else _check_branch(branch)

    @field_validator("commit", mode="before")
    @classmethod
    def _commit(cls, commit: object) -> object:
        return None if commit is None else _check_commit(commit)

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, status: object) -> object:
        return None if status is None else TaskStatus.parse(status)

    @model_validator(mode="after")
    def _changes_something(self) -> Self:
        if all(getattr(self, name) is None for name in TASK_FIELDS):
            raise ValidationFailed(
                "fields",
                [],
                f"no field to change ({', '.join(TASK_FIELDS)})",
                hint=Hint.TASK_FIELDS,
            )
        return self

    @classmethod
    def build(
        cls,
        *,
        title: object = None,
        description: object = None,
        notes: object = None,
        status: object = None,
        branch: object = None,
        commit: object = None,
    ) -> TaskUpdate:
        """Validate raw fields (None: not changed), raising coded errors."""
        return cls.model_validate(
            {
                "title": title,
                "description": description,
                "notes": notes,
                "status": status,
                "branch": branch,
                "commit": commit,
            }
        )

    def applied_to(self, task: Task, now: datetime) -> Task:
        """``task`` after this update made at ``now``: what every ``TaskRepo`` writes, from the
        task as stored when the update runs. ``completed_at`` is set on entering ``complete``,
        kept while it stays there and cleared on leaving it; ``updated_at`` moves past the
        stored one even when the clock does not (or steps back)."""
        changes: dict[str, object] = {
            name: value
            for name, value in (
                ("title", self.title),
                ("description", self.description),
                ("notes", self.notes),
            )
            if value is not None
        }
        if self.branch is not None and self.branch not in task.branches:
            changes["branches"] = [*task.branches, self.branch]
        if self.commit is not None and self.commit not in task.commits:
            changes["commits"] = [*task.commits, self.commit]
        at = now if now > task.updated_at else task.updated_at + timedelta(microseconds=1)
        changes["updated_at"] = at
        if self.status is not None:
            changes["status"] = self.status
            if self.status is not TaskStatus.COMPLETE:
                changes["completed_at"] = None
            elif task.status is not TaskStatus.COMPLETE:
                changes["completed_at"] = at
        return Task.model_validate({**task.model_dump(), **changes})


class TaskSummary(FrozenModel):
    """The token-lean view of a task used by list operations."""

    id: str
    title: str
    status: TaskStatus
    created_at: datetime
    updated_at: datetime


class TaskPage(FrozenModel):
    tasks: list[Task]
    total_count: int


class TaskQuery(FrozenModel):
    """Which tasks to list: a validated request, built once by the interface that received it."""

    status: TaskStatus | None = None
    branch: str | None = None
    page: Page = Page(limit=DEFAULT_TASK_PAGE)

    @classmethod
    def build(
        cls,
        *,
        status: object = None,
        branch: object = None,
        limit: object = None,
        offset: object = None,
    ) -> TaskQuery:
        """Validate raw fields (None: no filter, the default page), raising coded errors."""
        page = Page.build(limit, offset, default=DEFAULT_TASK_PAGE, maximum=MAX_TASK_PAGE)
        parsed = TaskStatus.parse(status) if status is not None else None
        if branch is not None and not isinstance(branch, str):
            raise ValidationFailed("branch", branch, "must be a string")
        no_nul("branch", branch)
        at_most("branch", branch, MAX_BRANCH_CHARS)
        return cls(status=parsed, branch=branch, page=page)
