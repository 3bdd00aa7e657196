"""The embedded PostgreSQL + pgvector server (``pgserver``), started in a data directory."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import warnings
from pathlib import Path
from typing import Any

import asyncpg

from codebase_core.errors import StoreUnavailable


def _import_pgserver() -> Any:
    # pgserver reads platformdirs' runtime dir at import; without XDG_RUNTIME_DIR that warns
    # (RuntimeDirWarning) and falls back to /tmp, which is what we want: silence only that.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        import pgserver

    return pgserver


def shared_buffers_mb() -> int:
    """The embedded server's buffer pool: 1/16 of the machine's memory, 128 MiB to 1 GiB.

    PostgreSQL's default of 128 MiB holds neither the HNSW indexes nor the postings of a
    100k-chunk project (about 200 MB each): searches then read some 1,500 pages a query from
    the operating system's cache (semantic p50 15 -> 12.5 ms, hybrid p95 62 -> 46 ms at
    512 MiB, ad hoc). The memory is only taken as pages are used."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 128
    return max(128, min(1024, total // 16 // 2**20))


def _configure(uri: str) -> bool:
    """Set the server's buffer pool (ALTER SYSTEM) unless it was set that way before, by us or
    by hand; whether it changed (it holds from the server's next start)."""

    async def run() -> bool:
        conn = await asyncpg.connect(uri)
        try:
            row = await conn.fetchrow(
                "SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576 AS mb, "
                "coalesce(sourcefile, '') AS file FROM pg_settings WHERE name = 'shared_buffers'"
            )
            want = shared_buffers_mb()
            if row["file"].endswith("postgresql.auto.conf") or row["mb"] == want:
                return False
            await conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(want)}MB'")
            return True
        finally:
            await conn.close()

    # A thread of its own: the caller may be on a thread whose event loop is running.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def _start(data_dir: Path) -> str:
    """Start (or attach to) the server, blocking: call it in a thread from async code."""
    pgserver = _import_pgserver()
    data_dir.mkdir(parents=True, exist_ok=True)
    fresh = not (data_dir / "PG_VERSION").exists()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        # 'stop': the server stops when the last process of ours using it exits; several
        # processes on one data directory share one postmaster (initdb is serialised by a lock).
        server = pgserver.get_server(data_dir, cleanup_mode="stop")
        if _configure(server.get_uri()) and fresh:
            # A cluster made just now restarts with its settings, unless another process of
            # ours uses it already (cleanup stops the server only for its last user); then it
            # takes them at its next start. The new handle registers this process again.
            server.cleanup()
            server = pgserver.PostgresServer(server.pgdata, cleanup_mode="stop")
    uri: str = server.get_uri()
    return uri


async def start_embedded(data_dir: Path) -> str:
    """Start (or attach to) the embedded server in ``data_dir``; returns its connection URI."""
    try:
        return await asyncio.to_thread(_start, data_dir)
    except Exception as e:  # pgserver raises plain exceptions from initdb/pg_ctl
        raise StoreUnavailable(
            f"could not start the embedded PostgreSQL in {data_dir}: {e}. Check that the "
            "directory is writable (CODEBASE_MCP_DATA_DIR), or set DATABASE_URL to a Postgres "
            "server with pgvector"
        ) from e


def stop_embedded(data_dir: Path) -> None:
    """Stop the embedded server of ``data_dir`` now (tests; normally it stops at exit)."""
    pgserver = _import_pgserver()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        pgserver.get_server(data_dir, cleanup_mode="stop").cleanup()
