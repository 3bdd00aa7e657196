"""A process's watching (``serve``, ``codebase-mcp worker``, ``codebase-mcp watch``): the
watching service over watchfiles, the store's watch claims and the job service, on the
repositories of every project (or the roots given)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from codebase_mcp_search.adapters.filesystem import (
    PathspecIgnoreRules,
    network_mount,
    root_ignore_files,
)
from codebase_mcp_search.adapters.memory import InMemoryWatchClaims
from codebase_mcp_search.adapters.postgres import PgWatchClaims
from codebase_mcp_search.adapters.watch import WatchfilesChangeSource
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.policies import IgnoreFiles, SkipPolicy
from codebase_mcp_search.core.services.watching import Target, WatchConfig, Watching
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.workspaces import Workspaces

log = logging.getLogger("codebase_mcp")


def watch_config(settings: Settings) -> WatchConfig:
    return WatchConfig(quiet_s=settings.watch_quiet_seconds)


def change_source(settings: Settings) -> WatchfilesChangeSource:
    return WatchfilesChangeSource(
        polling=settings.watch_polling,
        poll_ms=settings.watch_poll_ms,
        poll_reason=network_mount,
    )


@asynccontextmanager
async def running_watching(
    workspaces: Workspaces, roots: Sequence[str] | None = None
) -> AsyncIterator[Watching]:
    """Watching until the block ends: every repository of every project the store holds, or
    only ``roots`` (absolute paths, in the default project; one not indexed yet is indexed by
    its first job)."""
    settings = workspaces.settings
    database = workspaces.services.stores.database
    claims = InMemoryWatchClaims() if database is None else PgWatchClaims(database)
    rules = PathspecIgnoreRules()
    policy = SkipPolicy.configured(
        max_file_bytes=settings.max_file_bytes, allow_secrets=settings.allow_secrets
    )

    async def ignores_of(root: str) -> IgnoreFiles:
        return await asyncio.to_thread(root_ignore_files, root, rules)

    async def targets() -> list[Target]:
        if roots is not None:
            return [(workspaces.default_project, root) for root in roots]
        found: list[Target] = []
        for pid in await workspaces.services.stores.project_ids():
            codebase = await workspaces.codebase(pid)
            found.extend((pid, repo.path) for repo in await codebase.repositories())
        return found

    watching = Watching(
        targets=targets,
        source=change_source(settings),
        claims=claims,
        jobs=workspaces.jobs,
        policy=policy,
        ignores_of=ignores_of,
        config=watch_config(settings),
    )
    task = asyncio.create_task(watching.run(), name="watching")
    log.debug("watching started")
    try:
        yield watching
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if isinstance(claims, PgWatchClaims):
            await claims.close()


def resolved_roots(paths: Sequence[str]) -> list[str]:
    """``codebase-mcp watch PATH ...``: each path absolute and resolved, as an index request's
    root is; ``ValidationFailed`` for one that is no directory."""
    roots: list[str] = []
    for path in paths:
        real = os.path.realpath(os.path.expanduser(path))
        if not os.path.isdir(real):
            raise ValidationFailed("PATH", path, "must be an existing directory to watch")
        roots.append(real)
    return roots
