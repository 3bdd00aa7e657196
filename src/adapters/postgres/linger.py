"""The embedded server's idle period: it stays up for a while after its last user leaves, so
the next command finds it running (a command then costs a connection, not a server start).

pgserver counts a server's users in ``.handle_pids.json`` and, by default, the last one to
leave stops it. Processes that keep the server up past their exit (an idle period above 0)
leave without stopping it; a small detached watcher, one per data directory, stops it once no
live user has been seen for the idle period. The watcher is started by the user that finds
none running (its ``flock`` on ``.postgres.linger`` says whether one runs; the kernel drops it when
the watcher ends, however it ends) and outlives every process of ours; once the idle period
has passed with no live user it stops the server (if it runs) and ends: it leaves nothing
behind. Its decisions are taken under pgserver's lock, which every start and registration of
a user holds, so it never stops a server a user just attached to.

A user that ends with SIGKILL stays in pgserver's list: the watcher counts only the live ones.
Users mark their arrival (``.last_used``), so that a command shorter than the watcher's poll
still counts as use. This module runs as a script (the watcher): stdlib only at its top.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

LOCK = ".linger"
"""Held (``flock``) by the data directory's watcher for as long as it runs. Beside the data
directory, not in it: initdb takes only an empty directory, and a user notes its arrival
before the start."""
LAST_USED = ".last_used"
"""Touched by each user as it arrives: its time of change is the last arrival."""
STOP_WAIT_S = 60.0
"""How long the watcher waits for a stopping server to be gone."""


def poll_seconds(idle_s: float) -> float:
    """How often the watcher looks: often enough for the idle period to be kept within a
    tenth of it, at most every 5 s (a look reads two small files)."""
    return min(max(idle_s / 10, 0.05), 5.0)


def _pgserver_lock() -> Any:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        import pgserver

    server: Any = pgserver
    return server.PostgresServer._lock


def arrived(pgdata: Path, idle_s: float) -> bool:
    """This process uses (or is about to use) the server of ``pgdata`` and keeps it up for
    ``idle_s`` after the last user leaves: note the use, and start a watcher if none runs.
    Call it under pgserver's lock, before the start (a user killed while starting the server
    leaves a watcher) and after it (one that ended meanwhile is replaced). False: no watcher
    could be started (files beside the data directory not writable, no ``/bin/sh``), and the
    caller must stop the server itself as it leaves."""
    try:
        _beside(pgdata, LAST_USED).touch()
        if watcher_running(pgdata):
            return True
        # A shell puts the watcher in the background and exits at once: the watcher is
        # nobody's child (no zombie, no wait), in a session of its own (no terminal's Ctrl-C),
        # with no stdio of ours (a caller reading our stdout to its end does not wait for it).
        watcher = [sys.executable, "-P", __file__, str(pgdata), str(idle_s)]
        shell = subprocess.run(
            ["/bin/sh", "-c", '"$@" &', "sh", *watcher],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
        )
    except OSError:
        return False
    return shell.returncode == 0


def watcher_running(pgdata: Path) -> bool:
    """Whether a watcher holds ``pgdata``'s lock."""
    fd = os.open(_beside(pgdata, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # drops the lock, if this took it
    return False


def _beside(pgdata: Path, suffix: str) -> Path:
    """``.<data directory's name><suffix>`` beside it (``.postgres.linger``)."""
    return pgdata.parent / f".{pgdata.name}{suffix}"


def live_users(pgdata: Path) -> list[int]:
    """The processes registered as the server's users that still run."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(pids, list):
        return []
    return [p for p in pids if isinstance(p, int) and not gone(p)]


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie, dead but not yet reaped, is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        return not running(pid)
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def running(pid: int) -> bool:
    """Whether ``pid`` exists (a zombie too: see ``gone``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


def _last_used(pgdata: Path) -> float:
    try:
        return _beside(pgdata, LAST_USED).stat().st_mtime
    except OSError:
        return 0.0


def _stop(postmaster: int) -> None:
    """Fast shutdown (what ``pg_ctl stop`` sends), then wait for the postmaster to be gone."""
    with contextlib.suppress(OSError):
        os.kill(postmaster, signal.SIGINT)
    deadline = time.monotonic() + STOP_WAIT_S
    while not gone(postmaster) and time.monotonic() < deadline:
        time.sleep(0.05)


def watch(pgdata: Path, idle_s: float) -> None:
    """The watcher: until the server of ``pgdata`` has had no live user for ``idle_s``; then
    stop it, if it runs."""
    try:
        fd = os.open(_beside(pgdata, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # the directory is gone
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another watcher runs
        os.close(fd)
        return
    lock = _pgserver_lock()
    idle_since: float | None = None
    while True:
        time.sleep(poll_seconds(idle_s))
        with lock:
            if _done(pgdata, idle_s, idle_since := _idle_since(pgdata, idle_since)):
                # Unlocked before pgserver's lock is: a user arriving next starts a watcher.
                os.close(fd)
                return


def _idle_since(pgdata: Path, before: float | None) -> float | None:
    """Since when the server has had no live user, as far as this look tells (None: it has)."""
    if live_users(pgdata):
        return None
    return before or time.time()


def _done(pgdata: Path, idle_s: float, idle_since: float | None) -> bool:
    """Whether the watcher's work is over: no live user for the idle period (the server, if
    it runs, is stopped now). A server that is not running does not end the watch sooner: the
    watcher of a user that is starting it (or was killed starting it) must outlive the start."""
    if idle_since is None:
        return False
    if not pgdata.is_dir():  # deleted under the server, which stops by itself when it sees
        return True
    if time.time() - max(idle_since, _last_used(pgdata)) < idle_s:
        return False
    postmaster = postmaster_pid(pgdata)
    if postmaster is not None and not gone(postmaster) and _is_postgres(postmaster):
        _stop(postmaster)
    return True


def _is_postgres(pid: int) -> bool:
    """Whether ``pid`` is a PostgreSQL process (not another one that took a stale pid)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "postgres"
    except OSError:  # no /proc (not Linux): trust postmaster.pid
        return not Path("/proc/self").exists()


if __name__ == "__main__":  # the watcher: linger.py PGDATA IDLE_SECONDS
    watch(Path(sys.argv[1]), float(sys.argv[2]))
