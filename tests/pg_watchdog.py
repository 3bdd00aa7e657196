"""Stops a test run's embedded Postgres and removes its folder once the run is gone.

Started by ``tests.conftest`` beside the session's server, in a session of its own (Ctrl-C
in a terminal reaches the whole foreground process group: this must outlive it), with the
read end of a pipe as stdin whose write end only the pytest process holds. End of file on
stdin means the run is over however it ended: its own teardown (which did the work already:
then nothing is left to do), SIGTERM or SIGKILL (no teardown ran: the postmaster, started
by ``pg_ctl`` and re-parented to init, would run on forever, and the folder stay).

    python tests/pg_watchdog.py FOLDER PGDATA

Standard library only: it must start fast and not depend on the environment under test.
``reap_stale`` is also called at the start of each run, for folders whose watchdog itself
was killed (say, by the OOM killer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

PREFIX = "cb-test-pg-"
# A fast shutdown (SIGINT) takes well under a second; a loaded machine may need more.
STOP_WAIT_S = 30.0


def folder_name(pid: int) -> str:
    """``cb-test-pg-<pid>-``: a later run tells from the name whether its owner still runs."""
    return f"{PREFIX}{pid}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    # A zombie (dead, not yet reaped) is not alive.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[:1] != ["Z"]
    return True


def postgres_processes(folder: Path) -> list[int]:
    """PostgreSQL processes working under ``folder`` (a server's processes all make its data
    directory their working directory). Linux's ``/proc``; none elsewhere."""
    found: list[int] = []
    root = folder.resolve()
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if (entry / "comm").read_text().strip() != "postgres":
                    continue
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd == root or root in cwd.parents:
                found.append(int(entry.name))
    return found


def _postmaster(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_and_remove(folder: Path, pgdata: Path) -> None:
    """Stop the server of ``pgdata`` (fast shutdown, then kill what is left) and remove
    ``folder``. Idempotent: a run's teardown may have done both already."""
    postmaster = _postmaster(pgdata)
    if postmaster is not None and _alive(postmaster):
        with contextlib.suppress(OSError):
            os.kill(postmaster, signal.SIGINT)  # fast shutdown: ends the backends too
        deadline = time.monotonic() + STOP_WAIT_S
        while _alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.1)
    for pid in postgres_processes(folder):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def reap_stale(tmp: Path) -> None:
    """Stop and remove the test servers of runs that are gone (their pid is in the name)."""
    for folder in tmp.glob(f"{PREFIX}*-*"):
        owner = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            stop_and_remove(folder, folder / "pgdata")


def main() -> None:
    folder, pgdata = Path(sys.argv[1]), Path(sys.argv[2])
    # Not a terminal's signals' target any more (own session), but keep out of SIGINT anyway.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    stop_and_remove(folder, pgdata)


if __name__ == "__main__":
    main()
