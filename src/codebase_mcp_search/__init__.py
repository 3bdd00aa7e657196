"""codebase-mcp: semantic code search and development task tracking for AI coding assistants.

One import name over the hexagon (see ``docs/architecture.md``):

- ``codebase_mcp_search.core``: the domain (models, ports, services, ranking, policies,
  errors), stdlib and pydantic only;
- ``codebase_mcp_search.adapters``: one subpackage per technology, each implementing ports;
- ``codebase_mcp_search.entrypoints``: the composition root, the MCP server, the CLI and the
  library facade.

A library user needs the facade only::

    from codebase_mcp_search import open_codebase

    async with open_codebase() as cb:
        await cb.index("/path/to/repo")
        result = await cb.search("where are config files parsed")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codebase_mcp_search.entrypoints.facade import (
        Codebase,
        Workspaces,
        open_codebase,
        open_workspaces,
    )
    from codebase_mcp_search.entrypoints.settings import Settings

__all__ = ["Codebase", "Settings", "Workspaces", "open_codebase", "open_workspaces"]

_FACADE = {"Codebase", "Workspaces", "open_codebase", "open_workspaces"}


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import codebase_mcp_search.core`` (a worker process, a tool
    # reading the models) must not load the container, the drivers and every adapter.
    if name in _FACADE:
        from codebase_mcp_search.entrypoints import facade

        return getattr(facade, name)
    if name == "Settings":
        from codebase_mcp_search.entrypoints.settings import Settings

        return Settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
