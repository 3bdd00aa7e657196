"""The watching ports: ``ChangeSource`` (a tree's file changes, from a library the core does not
import) and ``WatchClaims`` (which process watches a repository)."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models.watching import FileChange, WatchMode


@runtime_checkable
class ChangeStream(Protocol):
    """The changes below one root, from ``ChangeSource.open`` until ``close``.

    Contract: ``mode`` says how they are learnt (and ``why``, when it is not the source's
    first choice). ``next`` waits for the next batch (never empty), one change per path, whose
    kind says whether the path exists at the batch's end (``DELETED``: it does not; a lock
    file created and removed within one batch is deleted); cancelling it loses nothing. ``drain`` returns, without waiting, every change
    already reported and not yet taken. ``close`` stops the watching (idempotent); ``next``
    then raises ``EOFError``, as it does when the root itself is gone."""

    mode: WatchMode
    why: str | None

    async def next(self) -> list[FileChange]: ...

    def drain(self) -> list[FileChange]: ...

    async def close(self) -> None: ...


class QueuedChanges:
    """What ``ChangeStream.next`` and ``drain`` are over a queue of batches that an adapter
    feeds (``None``: the end), shared by the adapters (which do not import each other)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._queue: asyncio.Queue[list[FileChange] | None] = asyncio.Queue()
        self._ended = False

    async def next(self) -> list[FileChange]:
        if self._ended:
            raise EOFError(self.root)
        got = await self._queue.get()
        if got is None:
            self._ended = True
            raise EOFError(self.root)
        return got

    def drain(self) -> list[FileChange]:
        out: list[FileChange] = []
        while not self._queue.empty():
            got = self._queue.get_nowait()
            if got is None:
                self._ended = True
                break
            out.extend(got)
        return out


@runtime_checkable
class ChangeSource(Protocol):
    """Watches trees for file changes.

    Contract: ``sees`` tells whether ``root`` is a directory on this machine's file system (a
    process with a shared database watches only the roots it sees); ``exists`` whether the
    file ``rel`` (relative to ``root``, ``/``-separated) exists now (git's lock files). ``open`` starts watching
    every file below ``root`` (recursively, one watcher for the tree) and returns its stream;
    where the file system's events cannot be had (the platform's watch limit reached, a
    network mount) it falls back to polling and says so in the stream's ``mode`` and ``why``.
    It raises ``ValidationFailed`` when ``root`` is not a directory."""

    async def sees(self, root: str) -> bool: ...

    async def exists(self, root: str, rel: str) -> bool: ...

    async def open(self, root: str) -> ChangeStream: ...


@runtime_checkable
class WatchClaims(Protocol):
    """Which process watches a repository: one claim per (project, root) among every process
    of a store (one data directory, or one database).

    Contract: ``claim`` takes the claim if no other holder has it (True), else answers False
    at once; a holder's claim again answers True. ``release`` gives one up (no error if not
    held). ``check`` answers whether the claims are still held: False when they were lost
    together (the connection holding them dropped), after which the holder has none and
    claims afresh. A holder that dies loses its claims. Infrastructure failures in ``claim``
    raise ``StoreUnavailable``."""

    async def claim(self, project_id: str, root: str) -> bool: ...

    async def release(self, project_id: str, root: str) -> None: ...

    async def check(self) -> bool: ...
