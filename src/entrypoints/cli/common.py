"""What every command gets: its arguments, settings and consoles, and the project it names."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

from rich.console import Console

from codebase_mcp_search.core.errors import Hint, ValidationFailed
from codebase_mcp_search.entrypoints.facade import Codebase, Workspaces
from codebase_mcp_search.entrypoints.settings import Settings

KNOWN_SHOWN = 10


class Output(Console):
    """rich's console, except that a closed stdout ends the command as ``| head`` expects
    (exit 141, in ``main``) rather than with rich's own exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


@dataclass(frozen=True)
class Run:
    """One command's arguments, settings, stdout (data) and stderr (progress, messages)."""

    args: argparse.Namespace
    settings: Settings
    out: Console
    err: Console
    # This command creates the embedded database (a new data directory): a first index.
    fresh_store: bool = False


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
