"""What every command gets: its arguments, settings and consoles, and the project it names."""

from __future__ import annotations

import argparse
import shlex
from functools import cached_property
from typing import TYPE_CHECKING

from codebase_mcp_search.core.errors import Hint, ValidationFailed
from codebase_mcp_search.entrypoints.facade import Codebase, Workspaces
from codebase_mcp_search.entrypoints.settings import Settings

if TYPE_CHECKING:
    from rich.console import Console

KNOWN_SHOWN = 10


class Run:
    """One command's arguments, settings, stdout (data) and stderr (progress, messages); each
    console is made when first used (``consoles``)."""

    def __init__(
        self, args: argparse.Namespace, settings: Settings, *, fresh_store: bool = False
    ) -> None:
        self.args = args
        self.settings = settings
        # This command creates the embedded database (a new data directory): a first index.
        self.fresh_store = fresh_store

    @cached_property
    def out(self) -> Console:
        from codebase_mcp_search.entrypoints.cli import consoles

        return consoles.stdout()

    @cached_property
    def err(self) -> Console:
        from codebase_mcp_search.entrypoints.cli import consoles

        return consoles.stderr()


async def open_project(ws: Workspaces, requested: str | None, *, create: bool) -> Codebase:
    """The project ``--project`` names (the default one when unset).

    As with the MCP tools, only what writes a project into existence (``index``, ``tasks
    create``) creates one: the other commands answer ``VALIDATION_ERROR`` for an unknown id,
    naming the known ones, and leave no empty project behind.
    """
    pid = ws.project_id(requested)
    if create:
        return await ws.codebase(pid)
    try:
        return await ws.codebase(pid, create=False)
    except ValidationFailed as e:
        if e.hint is not Hint.PROJECT:
            raise
        known = [p.id for p in await ws.projects()]
        listed = ", ".join(known[:KNOWN_SHOWN]) + (", ..." if len(known) > KNOWN_SHOWN else "")
        raise ValidationFailed(
            "project_id",
            pid,
            f"no such project; known: {listed or 'none yet'} "
            f"('codebase-mcp index PATH --project {shlex.quote(pid)}' or 'codebase-mcp tasks "
            "create' creates one)",
        ) from None
