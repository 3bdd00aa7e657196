"""Task models, and the rules their fields follow.

The rules live in ``Task``'s validators and nowhere else: ``TaskService`` builds and updates
tasks through the model. Each validator raises the coded error a client sees
(``ValidationFailed`` naming the field, the value and the rule; ``InvalidStatus``). Pydantic
collects only ``ValueError`` and ``AssertionError`` into its ``ValidationError``; the core
errors derive from neither, so the first broken rule, in field order, leaves validation as it
was raised.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import Field, field_validator

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
from codebase_mcp_search.core.errors import InvalidStatus, ValidationFailed, shorten
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
        if not isinstance(title, str) or not title.strip():
            raise ValidationFailed(
                "title", title, f"must be a non-empty string of 1-{MAX_TITLE} characters"
            )
        if len(title) > MAX_TITLE:
            raise ValidationFailed("title", title, f"must be at most {MAX_TITLE} characters")
        no_nul("title", title)
        return title

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
        """Each one a git branch name, as ``update`` appends it (so the error names ``branch``)."""
        for branch in _strings("branches", branches):
            if (
                not isinstance(branch, str)
                or not branch.strip()
                or len(branch) > MAX_BRANCH_CHARS
                or any(c.isspace() or c == "\x00" for c in branch)
            ):
                raise ValidationFailed(
                    "branch",
                    branch,
                    f"must be a git branch name: 1-{MAX_BRANCH_CHARS} chars, no spaces",
                )
        return branches

    @field_validator("commits", mode="before")
    @classmethod
    def _commits(cls, commits: object) -> object:
        """Each one a full git SHA, as ``update`` appends it (so the error names ``commit``)."""
        for commit in _strings("commits", commits):
            if not isinstance(commit, str) or not SHA_RE.match(commit):
                raise ValidationFailed(
                    "commit", commit, "must be a 40-character lowercase hex git SHA"
                )
        return commits

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
