"""The library's facade: one project's index, search and task tracker in a few lines.

    from codebase_mcp_search import open_codebase

    async with open_codebase() as cb:
        await cb.index("/path/to/repo")
        result = await cb.search("where are config files parsed")

``open_workspaces`` gives every project of the store (what the MCP server and the CLI use).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from codebase_mcp_search.core.models import check_project_id
from codebase_mcp_search.entrypoints.codebase import Codebase
from codebase_mcp_search.entrypoints.container import running_container
from codebase_mcp_search.entrypoints.projects import resolved
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.workspaces import Workspaces

__all__ = ["Codebase", "Workspaces", "open_codebase", "open_workspaces"]


@asynccontextmanager
async def open_workspaces(settings: Settings | None = None) -> AsyncIterator[Workspaces]:
    """Build the container, start its resources, and yield every project of its store."""
    chosen = settings or Settings()
    async with running_container(chosen) as container:
        yield Workspaces(
            container,
            chosen,
            await resolved(container.project_services()),
            await resolved(container.job_service()),
        )


@asynccontextmanager
async def open_codebase(
    settings: Settings | None = None, *, project_id: str | None = None
) -> AsyncIterator[Codebase]:
    """Build the container, start its resources, and yield one project's ``Codebase``."""
    chosen = settings or Settings()
    project = check_project_id(chosen.project if project_id is None else project_id)
    async with open_workspaces(chosen) as workspaces:
        yield await workspaces.codebase(project)
