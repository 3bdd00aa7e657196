"""Watching: a process's watchers, one per repository it serves and sees on its file system
and holds the claim of (``WatchClaims``: among several processes of one store, one watches a
repository). It looks again every ``recheck_s``: new repositories are watched, deleted ones
dropped, and those another process stopped watching taken over."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from codebase_mcp_search.core.errors import CoreError
from codebase_mcp_search.core.models.watching import WatchMode
from codebase_mcp_search.core.policies import SkipPolicy
from codebase_mcp_search.core.ports.watching import ChangeSource, WatchClaims
from codebase_mcp_search.core.services.jobs import JobService
from codebase_mcp_search.core.services.watching.coalescing import WatchConfig
from codebase_mcp_search.core.services.watching.repository import IgnoresOf, RepositoryWatch

log = logging.getLogger("codebase_mcp")

Target = tuple[str, str]
"""A repository to watch: (project id, root)."""
TargetsOf = Callable[[], Awaitable[list[Target]]]


@dataclass(frozen=True, slots=True)
class WatchState:
    """What this process knows of a repository's watching: ``mode`` None when another process
    (or none) watches it."""

    mode: WatchMode | None
    why: str | None = None
    jobs_queued: int = 0


class Watching:
    """The watchers of one process (see the module doc); ``run`` until cancelled."""

    def __init__(
        self,
        *,
        targets: TargetsOf,
        source: ChangeSource,
        claims: WatchClaims,
        jobs: JobService,
        policy: SkipPolicy,
        ignores_of: IgnoresOf,
        config: WatchConfig | None = None,
    ) -> None:
        self._targets = targets
        self._source = source
        self._claims = claims
        self._jobs = jobs
        self._policy = policy
        self._ignores_of = ignores_of
        self._config = config or WatchConfig()
        self._watches: dict[Target, tuple[RepositoryWatch, asyncio.Task[None]]] = {}
        self._wake = asyncio.Event()

    def state(self, project_id: str, root: str) -> WatchState:
        found = self._watches.get((project_id, root))
        if found is None:
            return WatchState(mode=None)
        watch = found[0]
        return WatchState(mode=watch.mode, why=watch.why, jobs_queued=watch.jobs_queued)

    def watched(self) -> dict[Target, WatchState]:
        """Every repository this process watches, with how."""
        return {target: self.state(*target) for target in self._watches}

    def wake(self) -> None:
        """Look for repositories to watch now (one was just indexed), not at the next
        recheck."""
        self._wake.set()

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self._recheck()
                except CoreError as e:  # the store away: look again at the next recheck
                    log.warning("watching: could not list the repositories to watch: %s", e)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._config.recheck_s)
                self._wake.clear()
        finally:
            await self._stop_all(release=True)

    async def _recheck(self) -> None:
        if self._watches and not await self._claims.check():
            log.warning("watching: the watch claims were lost; claiming again")
            await self._stop_all(release=False)
        wanted = set(await self._targets())
        for target, (_, task) in list(self._watches.items()):
            if target not in wanted or task.done():
                await self._stop(target)
        for target in sorted(wanted - set(self._watches)):
            if not await self._source.sees(target[1]):
                continue
            if await self._claims.claim(*target):
                self._start(target)

    def _start(self, target: Target) -> None:
        watch = RepositoryWatch(
            *target,
            source=self._source,
            jobs=self._jobs,
            policy=self._policy,
            ignores_of=self._ignores_of,
            config=self._config,
        )
        task = asyncio.create_task(self._guarded(watch), name=f"watch {target[1]}")
        self._watches[target] = (watch, task)

    async def _guarded(self, watch: RepositoryWatch) -> None:
        try:
            await watch.run()
        except (CoreError, EOFError, OSError) as e:
            # The root gone or unreadable: the next recheck drops it, or watches it again.
            log.info("watching %s stopped: %s", watch.root, e)

    async def _stop(self, target: Target, *, release: bool = True) -> None:
        _, task = self._watches.pop(target)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if release:
            with contextlib.suppress(CoreError):
                await self._claims.release(*target)

    async def _stop_all(self, *, release: bool) -> None:
        for target in list(self._watches):
            await self._stop(target, release=release)
