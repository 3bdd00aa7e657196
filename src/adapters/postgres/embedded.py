"""The embedded PostgreSQL + pgvector server (``pgserver``), started in a data directory."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

from codebase_core.errors import StoreUnavailable


def _import_pgserver() -> Any:
    # pgserver reads platformdirs' runtime dir at import; without XDG_RUNTIME_DIR that warns
    # (RuntimeDirWarning) and falls back to /tmp, which is what we want: silence only that.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        import pgserver

    return pgserver


def _start(data_dir: Path) -> str:
    pgserver = _import_pgserver()
    data_dir.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"XDG_RUNTIME_DIR is not set")
        # 'stop': the server stops when the last process of ours using it exits; several
        # processes on one data directory share one postmaster (initdb is serialised by a lock).
        server = pgserver.get_server(data_dir, cleanup_mode="stop")
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
