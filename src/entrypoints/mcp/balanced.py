"""Several HTTP server processes on one port, each accepting on a listening socket of its own.

uvicorn's supervisor gives every process the one listening socket, and whichever process wakes
first accepts every connection waiting (an event loop accepts until the queue is empty): 100
clients connecting at once often all landed in one of two processes, which served them all
while the other idled. Here each process listens on a socket of its own bound to the same
address with ``SO_REUSEPORT``, and Linux spreads new connections over the sockets by a hash of
each connection's addresses. Where the option does not balance (BSD and macOS hand every
connection to one socket; Windows has none), uvicorn's supervisor serves as it is.

The supervisor replaces a process that dies, after closing the socket it served (connections
waiting on it would never be accepted), stops every process on SIGINT or SIGTERM, and stops
the group when a process fails to start, as uvicorn's does.
"""

from __future__ import annotations

import functools
import logging
import signal
import socket
import sys
import threading
from multiprocessing.context import SpawnProcess
from types import FrameType

import uvicorn
from uvicorn._subprocess import get_subprocess
from uvicorn.config import STARTUP_FAILURE

log = logging.getLogger("codebase_mcp")

# How often the supervisor looks for a process that died.
WATCH_S = 0.5


def balances() -> bool:
    """Whether the kernel spreads connections over sockets sharing a port (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` that others may share (``SO_REUSEPORT``),
    with Nagle's algorithm off for the connections it accepts (they inherit the option)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _serve_one(config: uvicorn.Config, sockets: list[socket.socket]) -> None:
    """One server process (in the child): uvicorn on the socket it was given."""
    uvicorn.Server(config).run(sockets=sockets)


class BalancedGroup:
    """``workers`` uvicorn processes for ``config``, a listening socket each."""

    def __init__(self, config: uvicorn.Config, workers: int) -> None:
        self._config = config
        self._workers = workers
        self._port = config.port
        self._stop = threading.Event()
        self._running: list[tuple[SpawnProcess, socket.socket]] = []

    def _start(self) -> tuple[SpawnProcess, socket.socket]:
        sock = listening_socket(self._config.host, self._port, self._config.backlog)
        # A port of 0: the first socket's, for the others too.
        self._port = sock.getsockname()[1]
        process = get_subprocess(self._config, functools.partial(_serve_one, self._config), [sock])
        process.start()
        return process, sock

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM (or a process fails to start); then stop them all."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        try:
            self._running = [self._start() for _ in range(self._workers)]
            while not self._stop.wait(WATCH_S):
                self._replace_dead()
        finally:
            for process, _ in self._running:
                if process.is_alive():
                    process.terminate()
            for process, sock in self._running:
                process.join()
                sock.close()

    def _replace_dead(self) -> None:
        for i, (process, sock) in enumerate(self._running):
            if process.is_alive():
                continue
            process.join()
            sock.close()
            if process.exitcode == STARTUP_FAILURE:
                log.error("server process %s failed to start: stopping", process.pid)
                self._stop.set()
                return
            log.warning(
                "server process %s died (exit %s): replacing it", process.pid, process.exitcode
            )
            self._running[i] = self._start()
