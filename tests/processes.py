"""Processes as /proc shows them (Linux): a process tree, and whether a process still runs."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

Process = tuple[int, str]
"""A pid and its start time (a pid may be reused)."""


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(root: int) -> dict[Process, str]:
    """Every living descendant of ``root``, with its command line."""
    children: dict[int, list[Process]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append((int(entry), fields[19]))
    found: dict[Process, str] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child] = _cmdline(child[0])
            stack.append(child[0])
    return found


def alive(process: Process) -> bool:
    """Whether ``process`` runs (a zombie has ended: its parent may never reap it)."""
    fields = _stat(process[0])
    return fields is not None and fields[19] == process[1] and fields[0] not in ("Z", "X")


def not_postgres(cmdline: str) -> bool:
    """Not the embedded postmaster or one of its backends (shared, outliving us by design)."""
    return not cmdline.split(" ", 1)[0].endswith("postgres")


def left_after(processes: Iterable[Process], within_s: float) -> set[Process]:
    """The processes still running once all have ended or ``within_s`` has passed."""
    deadline = time.monotonic() + within_s
    while (left := {p for p in processes if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill(processes: Iterable[Process]) -> None:
    """SIGKILL those of ``processes`` still running (a test's own, left by a failure)."""
    for process in processes:
        if alive(process):
            with contextlib.suppress(ProcessLookupError):
                os.kill(process[0], signal.SIGKILL)
