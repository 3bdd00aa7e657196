"""Projects (workspaces): an isolated set of repositories, chunks and tasks, named by an id."""

from __future__ import annotations

import re

from codebase_mcp_search.core.defaults import DEFAULT_PROJECT
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models.base import FrozenModel

PROJECT_ID_RE = re.compile(r"^[A-Za-z0-9_\- ]{1,64}$")


def check_project_id(project_id: str | None) -> str:
    """A workspace id: 1-64 ASCII letters, digits, '-', '_' or spaces, without surrounding
    spaces (they are trimmed: ``" docs "`` is ``"docs"``, and a blank id is refused).

    Ids keep their case, but two projects never differ only in case: ``Workspaces`` refuses
    ``Default`` when ``default`` exists, naming it (see ``same_but_case``).
    """
    if project_id is None:
        return DEFAULT_PROJECT
    trimmed = project_id.strip() if isinstance(project_id, str) else None
    if trimmed == "":
        # Never taken as "the default": an id emptied by a script's unset variable would
        # otherwise read and write the default project unnoticed.
        raise ValidationFailed(
            "project_id",
            project_id,
            "is blank: leave it out for the default project, or name one (1-64 ASCII "
            "letters, digits, '-', '_' or inner spaces)",
        )
    if trimmed is None or not PROJECT_ID_RE.match(trimmed):
        raise ValidationFailed(
            "project_id",
            project_id,
            "must be 1-64 characters of ASCII letters, digits, '-', '_' or inner spaces",
        )
    return trimmed


def same_but_case(project_id: str, known: list[str]) -> str | None:
    """The known project whose id differs from ``project_id`` only in case, if any."""
    folded = project_id.casefold()
    for other in known:
        if other != project_id and other.casefold() == folded:
            return other
    return None


class ProjectInfo(FrozenModel):
    """A workspace (an isolated set of repositories, chunks and tasks) and its size."""

    id: str
    # The Postgres schema holding the project (None with the memory store).
    database_name: str | None
    repositories: int = 0
    files: int = 0
    chunks: int = 0
    tasks: int = 0
    # Bytes on disk (tables, indexes), where the store can tell.
    size_bytes: int | None = None
