"""What every interface checks of a request on its own machine before handing it down: a
repository path is an existing directory, resolved once (the path checked is the path indexed).
The request types themselves, with their rules and defaults, are the core's
(``core.models``: ``IndexRequest``, ``SearchQuery``, ``TaskQuery``, ``JobQuery``)."""

from __future__ import annotations

from pathlib import Path

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import IndexRequest
from codebase_mcp_search.core.models.base import no_nul


def resolve_repo_path(path: str | Path, field: str = "repo_path") -> str:
    """An existing directory as a normalised absolute path, or ``ValidationFailed`` naming
    ``field`` (the interface's name for it)."""
    raw = str(path)
    if not raw.strip():
        raise ValidationFailed(field, raw, "must be a path to an existing directory")
    no_nul(field, raw)
    p = Path(raw).expanduser()
    if not p.exists():
        raise ValidationFailed(field, raw, "does not exist: give an existing directory")
    if not p.is_dir():
        raise ValidationFailed(field, raw, "is not a directory: give a repository's root folder")
    return str(p.resolve())


def index_request(
    path: str | Path, *, name: str | None = None, force: bool = False, field: str = "repo_path"
) -> IndexRequest:
    """The ``IndexRequest`` for the directory at ``path`` (resolved; see ``resolve_repo_path``)."""
    return IndexRequest.build(resolve_repo_path(path, field), name=name, force=force, field=field)
