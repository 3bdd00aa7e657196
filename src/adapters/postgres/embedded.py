"""The embedded PostgreSQL + pgvector server (``pgserver``), started in a data directory."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Final

import asyncpg

from codebase_mcp_search.adapters.postgres import linger
from codebase_mcp_search.adapters.postgres.sql import Statement
from codebase_mcp_search.core.errors import StoreUnavailable


def _import_pgserver() -> Any:
    # pgserver reads platformdirs' runtime dir at import; without XDG_RUNTIME_DIR that warns
    # (RuntimeDirWarning) and falls back to /tmp, which is what we want: silence only that.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        import pgserver

    return pgserver


log = logging.getLogger("codebase_mcp")

_DEFAULT_MB = 128  # initdb's shared_buffers
_STARTING = threading.Lock()

SHARED_BUFFERS: Final = """
    SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576 AS mb,
           coalesce(sourcefile, '') AS file
    FROM pg_settings WHERE name = 'shared_buffers'
"""
# ALTER SYSTEM takes no parameter: the size (an int) is put in the text.
SET_SHARED_BUFFERS = Statement("ALTER SYSTEM SET shared_buffers = '{mb}MB'")


def shared_buffers_mb() -> int:
    """The embedded server's buffer pool: 1/16 of the machine's memory, 128 MiB to 1 GiB.

    PostgreSQL's default of 128 MiB holds neither the HNSW indexes nor the postings of a
    100k-chunk project: searches then read many pages a query back from the operating
    system's cache (docs/storage.md). The memory is only taken as pages are used."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return _DEFAULT_MB
    limit = _cgroup_limit()  # a container's share, when smaller
    if limit is not None:
        total = min(total, limit)
    return max(_DEFAULT_MB, min(1024, total // 16 // 2**20))


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            value = Path(path).read_text().strip()
        except OSError:
            continue
        if value.isdigit():
            return int(value)
    return None


def _configure(uri: str) -> bool:
    """Set the server's buffer pool (ALTER SYSTEM) if it has initdb's default from
    postgresql.conf (not one set by us before, nor by hand); whether it changed (it holds from
    the server's next start)."""

    async def run() -> bool:
        conn = await asyncpg.connect(uri)
        try:
            row = await conn.fetchrow(SHARED_BUFFERS)
            want = shared_buffers_mb()
            default = row["mb"] == _DEFAULT_MB and row["file"].endswith("/postgresql.conf")
            if not default or want == _DEFAULT_MB:
                return False
            await conn.execute(SET_SHARED_BUFFERS.at(mb=int(want)))
            return True
        finally:
            await conn.close()

    # A thread of its own: the caller may be on a thread whose event loop is running.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def _start(data_dir: Path, idle_s: float = 0.0) -> str:
    """Start (or attach to) the server, blocking: call it in a thread from async code. With
    ``idle_s`` above 0 it stays up that long after its last user leaves (``linger``)."""
    pgserver = _import_pgserver()
    data_dir.mkdir(parents=True, exist_ok=True)
    # pgserver counts users per process: two threads of one process must not restart the
    # server under each other.
    with _STARTING, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        fresh = not (data_dir / "PG_VERSION").exists()
        # 'stop': the server stops when the last process of ours using it exits; several
        # processes on one data directory share one postmaster (initdb is serialised by a lock).
        _forget_dead_users(data_dir)
        _end_orphans(data_dir)
        if idle_s > 0:
            with pgserver.PostgresServer._lock:
                linger.arrived(data_dir.expanduser().resolve(), idle_s)
        known = pgserver.PostgresServer._instances.get(data_dir.expanduser().resolve())
        # A server found running was configured by the start that brought it up: only a
        # start of ours asks (a connection of its own, most of an attach's time).
        up = _running(data_dir)
        if fresh:
            server = _create(pgserver, data_dir)
        else:
            server = pgserver.get_server(data_dir, cleanup_mode="stop")
        if server is known:
            # This process started it before: if it died since (killed, crashed), start it
            # again (a no-op while it runs).
            with pgserver.PostgresServer._lock:
                server.ensure_postgres_running()
        if not fresh and not up:
            # A cluster created before our buffer pool was set (by an older version) takes it
            # at its next start. One created here has it (one created by another process
            # meanwhile, from that process).
            _configure(server.get_uri())
        # Lingering, this process leaves without stopping the server: the watcher does.
        watched = False
        if idle_s > 0:
            with pgserver.PostgresServer._lock:
                watched = linger.arrived(server.pgdata, idle_s)
        server.cleanup_mode = None if watched else "stop"
    uri: str = server.get_uri()
    return uri


def _running(data_dir: Path) -> bool:
    """Whether the postmaster of ``data_dir`` runs now."""
    pid = linger.postmaster_pid(data_dir.expanduser().resolve())
    return pid is not None and not linger.gone(pid)


def _create(pgserver: Any, data_dir: Path) -> Any:
    """Create the cluster of ``data_dir`` and start it, with its buffer pool from the first
    start: initdb writes it into postgresql.conf, so the server needs no restart to take it.
    If initdb or the server will not run with it (too little shared memory allowed), initdb's
    default instead, for good. initdb does not wait for its files to reach the disk (seconds
    of a first start on a busy disk): a thread of ours syncs them once the server runs, and
    the process waits for it before it exits."""
    pgdata = data_dir.expanduser().resolve()
    want = shared_buffers_mb()
    sized = ["--set", f"shared_buffers={want}MB"] if want != _DEFAULT_MB else []
    module = pgserver.postgres_server
    initdb = module.initdb
    extra = ["--no-sync", *sized]
    # pgserver runs initdb (as its own user when we are root) with fixed options: ours are
    # added for these calls only, under our start lock.
    module.initdb = lambda args, **kw: initdb([*args, *extra], **kw)
    try:
        try:
            server = pgserver.get_server(data_dir, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            if not sized:
                raise
            # initdb failed (and emptied the directory), or the server would not start.
            if (pgdata / "PG_VERSION").exists():
                _forget_settings(pgdata)
            else:
                extra = ["--no-sync"]
            # pgserver keeps the failed handle: a new one replaces it.
            server = pgserver.PostgresServer(pgdata, cleanup_mode="stop")
            _forget_settings(pgdata)  # initdb's default, marked as set: not tried again
    finally:
        module.initdb = initdb
    sync = threading.Thread(
        target=_sync_cluster, args=(initdb, pgdata, server.system_user), name="initdb-sync"
    )
    sync.start()  # not a daemon: the interpreter waits for it at exit
    return server


def _sync_cluster(initdb: Any, pgdata: Path, user: str | None) -> None:
    """``initdb --sync-only``: what initdb left unsynced is written to disk."""
    try:
        initdb(["--sync-only"], pgdata=pgdata, user=user)
    except Exception:  # the files reach the disk anyway, only later
        log.debug("syncing the new cluster's files failed", exc_info=True)


def _forget_dead_users(data_dir: Path) -> None:
    """Drop the processes that died without saying so (SIGKILL) from pgserver's list of the
    server's users: the last live user then stops the server at its exit, so a killed CLI's
    server does not outlive every process that used it."""
    pgserver = _import_pgserver()
    users = data_dir / ".handle_pids.json"
    with pgserver.PostgresServer._lock:
        try:
            pids = json.loads(users.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(pids, list):
            return
        alive = [p for p in pids if isinstance(p, int) and linger.running(p)]
        if alive != pids:
            users.write_text(json.dumps(alive))


ORPHANS_WAIT_S: Final = 5.0
"""How long a restart waits for the killed processes of a dead server to be gone."""


def _end_orphans(data_dir: Path) -> None:
    """Kill what is left of a server whose postmaster died (SIGKILL, a crash): its backends.

    A backend outlives its postmaster until it next waits for something, so one busy with a
    long statement (an index build, a large scan) runs on for up to the statement timeout,
    keeps the old shared memory attached, and a new postmaster refuses to start meanwhile
    ("pre-existing shared memory block is still in use"): jobs and searches would wait for
    minutes. A postmaster that dies normally ends its backends itself; this does it for one
    that could not. Done under pgserver's lock, which every start of ours holds, so no new
    server is starting in the directory meanwhile. Linux only (``/proc``): elsewhere the
    restart waits for the backends to notice."""
    pgserver = _import_pgserver()
    pgdata = data_dir.expanduser().resolve()
    with pgserver.PostgresServer._lock:
        postmaster = linger.postmaster_pid(pgdata)
        if postmaster is None or not linger.gone(postmaster):
            return
        orphans = _processes_in(pgdata)
        for pid in orphans:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + ORPHANS_WAIT_S
        while any(not linger.gone(pid) for pid in orphans) and time.monotonic() < deadline:
            time.sleep(0.05)


def _processes_in(pgdata: Path) -> list[int]:
    """The PostgreSQL processes working in ``pgdata`` (a server's processes all make it
    their working directory); none where ``/proc`` does not tell."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if (entry / "comm").read_text().strip() != "postgres":
                    continue
                if Path(os.readlink(entry / "cwd")) != pgdata:
                    continue
            except OSError:  # ended meanwhile, or not ours to look at
                continue
            found.append(int(entry.name))
    return found


def _forget_settings(pgdata: Path) -> None:
    """Drop our line from postgresql.auto.conf of a stopped server, and mark the value as
    set (to initdb's default), so that it is not tried again."""
    conf = pgdata / "postgresql.auto.conf"
    lines = [ln for ln in conf.read_text().splitlines() if not ln.startswith("shared_buffers")]
    conf.write_text("\n".join([*lines, f"shared_buffers = '{_DEFAULT_MB}MB'", ""]))


def _started_here(data_dir: Path) -> bool:
    """Whether this process started (or attached to) the server of ``data_dir`` before."""
    pgserver = _import_pgserver()
    return data_dir.expanduser().resolve() in pgserver.PostgresServer._instances


async def start_embedded(data_dir: Path, idle_s: float = 0.0) -> str:
    """Start (or attach to) the embedded server in ``data_dir``; returns its connection URI.
    A server this process started before and that died since is started again. ``idle_s``:
    how long it stays up after its last user leaves (0: it stops with that user)."""
    before = _started_here(data_dir)
    try:
        return await asyncio.to_thread(_start, data_dir, idle_s)
    except Exception as e:  # pgserver raises plain exceptions from initdb/pg_ctl
        # Where it keeps its data, and pgserver's text (which names it), are the private
        # detail: a remote client is told what failed, never the server's paths.
        private = f"data directory {data_dir}: {type(e).__name__}: {e}"
        if before:
            raise StoreUnavailable(
                "the embedded PostgreSQL stopped and is not back yet; it is started again on "
                "the next call: retry in a few seconds ('codebase-mcp doctor' checks it)",
                private=private,
            ) from e
        raise StoreUnavailable(
            "could not start the embedded PostgreSQL: check that its data directory "
            "(CODEBASE_MCP_DATA_DIR) is writable, or set DATABASE_URL to a Postgres server with "
            "pgvector",
            private=private,
        ) from e


def prestart_embedded(data_dir: Path, idle_s: float = 0.0) -> None:
    """Start the embedded server of ``data_dir`` in a thread of its own, now: a process that
    will need it soon has it up by then (``start_embedded`` waits for this start, then
    attaches). A failure is left to ``start_embedded``, which tries again and reports it."""

    def run() -> None:
        try:
            _start(data_dir, idle_s)
        except Exception:  # reported by the start that needs the server
            log.debug("early start of the embedded server failed", exc_info=True)

    threading.Thread(target=run, name="embedded-postgres-start", daemon=True).start()


def release_embedded(data_dir: Path) -> None:
    """This process is done with the embedded server of ``data_dir``: it leaves the server's
    users, and stops the server if it was the last (unless it lingers: ``linger``). pgserver
    does so at interpreter exit, but a server stopped by SIGTERM never gets there: uvicorn
    re-raises the signal after its graceful shutdown, and the default action ends the process
    without exit handlers."""
    pgserver = _import_pgserver()
    server = pgserver.PostgresServer._instances.get(data_dir.expanduser().resolve())
    if server is not None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
            server.cleanup()


def stop_embedded(data_dir: Path) -> None:
    """Stop the embedded server of ``data_dir`` now, if this process is its last user (tests;
    normally it stops at exit, or after its idle period)."""
    pgserver = _import_pgserver()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        server = pgserver.get_server(data_dir, cleanup_mode="stop")
        server.cleanup_mode = "stop"
        server.cleanup()
