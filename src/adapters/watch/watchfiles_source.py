"""WatchfilesChangeSource: a tree's file changes from watchfiles (Rust ``notify``): the
platform's events (inotify, FSEvents, ReadDirectoryChangesW), or polling where they cannot be
had (the watch limit reached, a file system that does not notify). One watcher, and one
thread waiting on it, per root."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable

# RustNotify rather than ``watchfiles.watch``: its constructor is where the watch limit and a
# missing root raise, so the fallback to polling is decided before the stream is handed out
# (``watch`` raises only at its first wait). It is the class ``watch`` itself drives.
from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models.watching import ChangeKind, FileChange, WatchMode
from codebase_mcp_search.core.ports.watching import QueuedChanges

KINDS = {1: ChangeKind.ADDED, 2: ChangeKind.MODIFIED, 3: ChangeKind.DELETED}
# watchfiles groups the events of a burst: until none came for STEP_MS, at most DEBOUNCE_MS.
DEBOUNCE_MS = 800
STEP_MS = 100
# How long one wait lasts before the thread looks at its stop flag again.
TIMEOUT_MS = 5000

PollReason = Callable[[str], str | None]
"""Why ``root`` must be polled (a network file system), or None: events will do."""


def _never(_root: str) -> str | None:
    return None


def _batch(got: set[tuple[int, str]], prefix: int) -> list[FileChange]:
    """watchfiles' set of (kind, path) as changes by path. A path changed more than once in
    the set (created then deleted: git's ``index.lock``) comes with no order among its kinds:
    whether it exists now decides (a ``stat``, only for those)."""
    kinds: dict[str, set[int]] = {}
    for raw, path in got:
        if len(path) > prefix:
            kinds.setdefault(path, set()).add(raw)
    batch: list[FileChange] = []
    for path in sorted(kinds):
        seen = kinds[path]
        kind: ChangeKind
        if len(seen) == 1:
            kind = KINDS.get(next(iter(seen)), ChangeKind.MODIFIED)
        elif not os.path.lexists(path):
            kind = ChangeKind.DELETED
        else:
            kind = ChangeKind.ADDED if 1 in seen else ChangeKind.MODIFIED
        batch.append(FileChange(kind, path[prefix:].replace(os.sep, "/")))
    return batch


class WatchfilesStream(QueuedChanges):
    """The changes below one root (see ``ChangeStream``), fed by a thread of its own."""

    def __init__(self, root: str, notify: RustNotify, mode: WatchMode, why: str | None) -> None:
        super().__init__(root)
        self.mode = mode
        self.why = why
        self._notify = notify
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._wait, name=f"watch {root}", daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        prefix = len(self.root.rstrip(os.sep)) + 1
        try:
            while not self._stop.is_set():
                got = self._notify.watch(DEBOUNCE_MS, STEP_MS, TIMEOUT_MS, self._stop)
                if not isinstance(got, set):
                    continue  # a timeout: look at the stop flag; 'stop': it is set
                batch = _batch(got, prefix)
                if batch:
                    self._put(batch)
                if not os.path.isdir(self.root):
                    break
        except (OSError, RuntimeError):  # closed under it, or the watcher failed: the end
            pass
        finally:
            self._put(None)

    def _put(self, item: list[FileChange] | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody listens
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def close(self) -> None:
        self._stop.set()
        await asyncio.to_thread(self._thread.join)
        self._notify.close()


class WatchfilesChangeSource:
    """watchfiles behind ``ChangeSource``: native events unless ``polling`` (always poll) or
    ``poll_reason`` names a reason for a root, or the platform refuses them."""

    def __init__(
        self,
        *,
        polling: bool = defaults.WATCH_POLLING,
        poll_ms: int = defaults.WATCH_POLL_MS,
        poll_reason: PollReason = _never,
    ) -> None:
        self._polling = polling
        self._poll_ms = poll_ms
        self._poll_reason = poll_reason

    async def sees(self, root: str) -> bool:
        return await asyncio.to_thread(os.path.isdir, root)

    async def exists(self, root: str, rel: str) -> bool:
        return await asyncio.to_thread(os.path.lexists, os.path.join(root, *rel.split("/")))

    async def open(self, root: str) -> WatchfilesStream:
        why = "CODEBASE_MCP_WATCH_POLLING is set" if self._polling else self._poll_reason(root)
        try:
            notify = await asyncio.to_thread(self._notify, root, why is not None)
        except FileNotFoundError as e:
            raise ValidationFailed("repo_path", root, "is not a directory") from e
        except (OSError, WatchfilesRustInternalError) as e:
            # inotify's max_user_watches (or instances) reached, or events refused otherwise.
            why = f"file system events unavailable ({e}); rescanning every {self._poll_ms} ms"
            notify = await asyncio.to_thread(self._notify, root, True)
        mode = WatchMode.NATIVE if why is None else WatchMode.POLLING
        return WatchfilesStream(root, notify, mode, why)

    def _notify(self, root: str, polling: bool) -> RustNotify:
        if not os.path.isdir(root):
            raise FileNotFoundError(root)
        return RustNotify([root], False, polling, self._poll_ms, True, True)
