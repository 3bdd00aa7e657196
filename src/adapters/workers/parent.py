"""Child processes that end with their parent, however the parent ends.

A chunking worker waits for tasks on the pool's pipes, whose ends it holds itself: when its
parent is SIGKILLed nothing tells it, and it sits there adopted by init (and keeps
multiprocessing's resource tracker alive, whose pipe it holds too). So each child watches: a
thread checks every ``CHECK_S`` that its parent is still the process that started it.

A thread polling ``os.getppid()`` rather than Linux's ``prctl(PR_SET_PDEATHSIG)``: that signal
fires when the *thread* that started the child ends, not its process (a pool started from a
thread that then ends, as ``asyncio.to_thread``'s or a library user's event loop in a thread of
its own may, would lose its workers while still using them); it is Linux only and needs
ctypes. The poll costs a wake-up every half second and ends an orphan within a second, on
every POSIX system. (On Windows a parent's pid stays a child's ``getppid()`` after it ends:
nothing is noticed there.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

CHECK_S = 0.5
"""How often a child checks its parent: an orphan ends within about this long."""


def _exit_now() -> None:
    # No clean-up: the parent that would take the results is gone, and a clean exit would
    # wait on the pool's queues, whose other ends it held.
    os._exit(1)


def exit_with_parent(parent: int, on_orphan: Callable[[], None] = _exit_now) -> threading.Thread:
    """In a child: call ``on_orphan`` (by default, exit at once) as soon as the process's
    parent is no longer ``parent`` (the pid the parent passed down, so that a parent already
    gone when this starts is noticed too). Returns the watching thread (a daemon)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(CHECK_S)
        on_orphan()

    watcher = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    watcher.start()
    return watcher
