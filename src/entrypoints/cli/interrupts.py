"""Ctrl-C at any moment of a command: one line (``interrupted``), exit 130, no traceback.

Three moments need more than ``except KeyboardInterrupt`` around the command:

- while the modules load (a second or two before ``main`` runs): ``loading`` ends the
  process there;
- while the command runs on the event loop, asyncio cancels it; work still finishing then
  (dependency_injector's callbacks setting the result of a future already cancelled, an
  executor thread starting the embedded server) makes the loop report errors that mean only
  "cancelled": ``quiet_once_cancelled`` drops them;
- after the command, while the process exits: pgserver stops the embedded server in an
  ``atexit`` callback, and a KeyboardInterrupt there is printed as "Exception ignored" and
  leaves the server running. ``defer_interrupts`` holds a Ctrl-C from then on until the exit
  work is done, and then ends the process with 130.

The same last exit callback ends a one-shot command's process once its exit work is done
(``exit_quickly``): the interpreter's teardown after it (every module's objects freed, a last
full collection) was 0.05-0.1 s of CPU of a search from the command line, and leaves nothing
behind that anyone reads.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # asyncio and logging load with the rest, inside ``loading``
    import asyncio

EXIT_INTERRUPTED = 130  # entrypoints.cli.errors' (not imported: it loads the core)
MESSAGE = "interrupted"
_said: list[bool] = []


def say_interrupted() -> None:
    """The last line of an interrupted command (once)."""
    if _said:
        return
    _said.append(True)
    with suppress(OSError, ValueError):  # stderr closed: the exit code still tells
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()


@contextmanager
def loading() -> Iterator[None]:
    """Around the imports of the command line: Ctrl-C while they load ends the process with
    130 (nothing has started yet, so there is nothing to keep or stop)."""
    try:
        yield
    except KeyboardInterrupt:
        say_interrupted()
        raise SystemExit(EXIT_INTERRUPTED) from None


def quiet_once_cancelled(task: asyncio.Task[Any]) -> None:
    """Once ``task`` (the command) is cancelled, the running loop's error reports are the
    cancellation's echoes, not news: they go to the debug log only."""
    import asyncio
    import logging

    loop = asyncio.get_running_loop()
    log = logging.getLogger("codebase_mcp")

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if task.cancelling() or task.cancelled():
            log.debug("after Ctrl-C: %s", context.get("message"), exc_info=context.get("exception"))
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


class _Deferred:
    """A Ctrl-C received while the process exits, acted upon once the exit work is done."""

    def __init__(self) -> None:
        self.pressed = False
        self.armed = False
        self.quick: int | None = None  # the exit code, once the command said it (exit_quickly)

    def hold(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True

    def finish(self) -> None:
        """Last of the exit callbacks (registered first): the exit code becomes 130 after a
        Ctrl-C; a one-shot command's process ends here (``exit_quickly``)."""
        if not self.pressed and self.quick is None:
            # The exit code is decided: a Ctrl-C from now on changes nothing. Ignored rather
            # than held, since the interpreter's teardown after this callback gives SIGINT back
            # its default action, which would kill the process (exit -2) mid-exit.
            with suppress(ValueError):  # not the main thread (an embedding caller)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        if self.pressed:
            say_interrupted()
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        os._exit(EXIT_INTERRUPTED if self.pressed else self.quick or 0)


_DEFERRED = _Deferred()


def prepare_exit() -> None:
    """Call before the command starts anything that registers exit work (the embedded
    server's handle does): ``defer_interrupts`` acts after all of it."""
    if not _DEFERRED.armed:
        _DEFERRED.armed = True
        atexit.register(_DEFERRED.finish)


def exit_quickly(code: int) -> None:
    """The command ended with ``code``, and its process may skip the interpreter's teardown:
    once the exit callbacks ran (the last is ``prepare_exit``'s), it ends with ``code``. Only
    after ``prepare_exit``, in a process that runs one command; its threads have ended by
    then (the interpreter waits for them before the exit callbacks)."""
    if _DEFERRED.armed:
        _DEFERRED.quick = code


def defer_interrupts() -> None:
    """From now until the process has exited: Ctrl-C no longer interrupts what is being done
    (closing connections, stopping the embedded server), it makes the exit code 130."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _DEFERRED.hold)
