"""What the server's lifespan holds for its tools: the workspaces, the allowed roots and the
server's job worker."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from fastmcp import Context

from codebase_mcp_search.core.errors import CoreError, ValidationFailed
from codebase_mcp_search.core.services import JobWorker
from codebase_mcp_search.core.services.watching import Watching
from codebase_mcp_search.entrypoints.facade import Workspaces


class AllowedRoots:
    """The directories ``index_repository`` may index (CODEBASE_MCP_ALLOWED_ROOTS); None: any."""

    def __init__(self, roots: Sequence[str] | None) -> None:
        self.roots = [os.path.realpath(r) for r in roots] if roots is not None else None

    def check(self, path: str, field: str = "repo_path") -> str:
        """``path`` resolved (symlinks followed), or ``ValidationFailed`` naming the allowed
        roots when it lies outside them."""
        real = os.path.realpath(path)
        if self.roots is None:
            return real
        for root in self.roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return real
        raise ValidationFailed(
            field,
            path,
            f"is outside the allowed roots {self.roots} (CODEBASE_MCP_ALLOWED_ROOTS): index a "
            "directory inside one of them, or add its root to that variable",
        )

    def allows(self, path: str) -> bool:
        try:
            self.check(path)
        except ValidationFailed:
            return False
        return True


SEARCHES_AT_ONCE = 4


@dataclass
class ServerState:
    """What the lifespan yields: tools read it from ``ctx.lifespan_context``."""

    workspaces: Workspaces
    roots: AllowedRoots
    started: float = field(default_factory=time.monotonic)
    # The server's own job worker (None when dedicated workers run the jobs).
    worker: JobWorker | None = None
    # What keeps the served repositories' indexes fresh (None: CODEBASE_MCP_WATCH=false).
    watching: Watching | None = None
    # Searches running at once; more wait their turn, first come first served. Under load a
    # few searches interleaving finish sooner than a hundred sharing the event loop, and a
    # health probe or a task call does not queue behind all of them.
    search_slots: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(SEARCHES_AT_ONCE)
    )


def state_of(ctx: Context) -> ServerState:
    state = ctx.lifespan_context
    if not isinstance(state, ServerState):  # only if a tool ran outside the lifespan
        raise CoreError("the server is not started")
    return state
