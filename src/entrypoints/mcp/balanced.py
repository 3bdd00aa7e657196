"""Several HTTP server processes on one port, each accepting on a listening socket of its own.

uvicorn's supervisor gives every process the one listening socket, and whichever process wakes
first accepts every connection waiting (an event loop accepts until the queue is empty): 100
clients connecting at once often all landed in one of two processes, which served them all
while the other idled. Here each process listens on a socket of its own bound to the same
address with ``SO_REUSEPORT``, and Linux spreads new connections over the sockets by a hash of
each connection's addresses. Where the option does not balance (BSD and macOS hand every
connection to one socket; Windows has none), uvicorn's supervisor serves as it is.

The supervisor first makes sure nothing else listens on the port (sockets bound with
``SO_REUSEPORT`` would share it with another server without a word). It replaces a process
that dies, after closing the socket it served (connections waiting on it would never be
accepted), takes signals as uvicorn's does, and stops the group when a process fails to
start. A process whose supervisor is gone (SIGKILLed: it could not stop the group) stops by
itself (``exit_with_parent``), rather than serve on, unseen, a port a new server cannot take.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import sys
import time
from multiprocessing.context import SpawnProcess
from types import FrameType

import uvicorn
from uvicorn._subprocess import get_subprocess
from uvicorn.config import STARTUP_FAILURE

from codebase_mcp_search.adapters.workers.parent import exit_with_parent
from codebase_mcp_search.core.errors import ValidationFailed

log = logging.getLogger("codebase_mcp")

# How often the supervisor looks for a process that died.
WATCH_S = 0.5
# A server process left without its supervisor stops as at SIGTERM (its jobs handed back), or
# is ended this long after.
ORPHAN_GRACE_S = 3.0


def balances() -> bool:
    """Whether the kernel spreads connections over sockets sharing a port (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def free_port(host: str, port: int) -> int:
    """``port`` (or, for 0, one the system picks) if nothing listens on it; ``OSError``
    (address in use) otherwise. Sockets bound with ``SO_REUSEPORT`` share a port without a
    word, so another server already there (an old one still running, the same command
    started twice) would silently get a share of the connections: a bind without the option
    finds it first."""
    probe = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        # As uvicorn binds: connections of a previous run in TIME_WAIT do not count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        chosen: int = probe.getsockname()[1]
        return chosen
    finally:
        probe.close()


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` that others may share (``SO_REUSEPORT``),
    with Nagle's algorithm off for the connections it accepts (they inherit the option)."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
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


def _stop_orphan() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(ORPHAN_GRACE_S)
    os._exit(1)


def _serve_one(config: uvicorn.Config, supervisor: int, sockets: list[socket.socket]) -> None:
    """One server process (in the child): uvicorn on the socket it was given, while the
    ``supervisor`` process runs."""
    exit_with_parent(supervisor, _stop_orphan)
    uvicorn.Server(config).run(sockets=sockets)


_Worker = tuple[SpawnProcess, socket.socket]


class BalancedGroup:
    """``workers`` uvicorn processes for ``config``, a listening socket each.

    Signals as uvicorn's supervisor takes them: SIGINT and SIGTERM stop the group, SIGHUP
    replaces every process (each new one serving before its old one stops), SIGTTIN and
    SIGTTOU add and remove one. A handler only records the signal; the watch loop acts.
    """

    def __init__(self, config: uvicorn.Config, workers: int) -> None:
        self._config = config
        self._workers = workers
        self._port = config.port
        self._signals: list[int] = []
        self._stopping = False
        self._running: list[_Worker] = []

    def _start(self) -> _Worker:
        sock = listening_socket(self._config.host, self._port, self._config.backlog)
        try:
            target = functools.partial(_serve_one, self._config, os.getpid())
            process = get_subprocess(self._config, target, [sock])
            process.start()
        except BaseException:
            sock.close()
            raise
        return process, sock

    @staticmethod
    def _stop(worker: _Worker) -> None:
        process, sock = worker
        if process.is_alive():
            process.terminate()
        process.join()
        sock.close()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals.append(signum)

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM (or a process fails to start); then stop them all."""
        try:
            self._port = free_port(self._config.host, self._port)
        except OSError as e:
            raise ValidationFailed(
                "--port",
                self._port,
                f"cannot listen on {self._config.host}:{self._port} ({e.strerror}): another "
                "server may be running there; stop it or choose another --port",
            ) from e
        watched = [signal.SIGINT, signal.SIGTERM]
        watched += [
            getattr(signal, n) for n in ("SIGHUP", "SIGTTIN", "SIGTTOU") if hasattr(signal, n)
        ]
        for sig in watched:
            signal.signal(sig, self._on_signal)
        try:
            for _ in range(self._workers):
                self._running.append(self._start())
            while not self._stopping:
                time.sleep(WATCH_S)
                self._handle_signals()
                if not self._stopping:
                    self._replace_dead()
        finally:
            for process, _ in self._running:
                if process.is_alive():
                    process.terminate()
            for worker in self._running:
                self._stop(worker)

    def _handle_signals(self) -> None:
        while self._signals:
            sig = self._signals.pop(0)
            if sig in (signal.SIGINT, signal.SIGTERM):
                self._stopping = True
            elif sig == getattr(signal, "SIGHUP", None):
                for i, old in enumerate(self._running):
                    self._running[i] = self._start()
                    self._stop(old)
            elif sig == getattr(signal, "SIGTTIN", None):
                self._running.append(self._start())
            elif sig == getattr(signal, "SIGTTOU", None) and len(self._running) > 1:
                self._stop(self._running.pop())

    def _replace_dead(self) -> None:
        for i, (process, sock) in enumerate(self._running):
            if process.is_alive():
                continue
            process.join()
            sock.close()
            if process.exitcode == STARTUP_FAILURE:
                log.error("server process %s failed to start: stopping", process.pid)
                self._running.pop(i)
                self._stopping = True
                return
            log.warning(
                "server process %s died (exit %s): replacing it", process.pid, process.exitcode
            )
            self._running[i] = self._start()
