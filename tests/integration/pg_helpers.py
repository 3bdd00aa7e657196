"""Helpers shared by the Postgres integration tests (test_postgres_*.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.models import SearchFilters
from codebase_mcp_search.core.ports import ChunkStore
from codebase_mcp_search.core.services import IndexingService
from tests.factories import THREADS

NO_FILTER = SearchFilters()

FILES = {
    "app/auth.py": "import hashlib\n\n\ndef hash_password(pw):\n    return hashlib.sha256(pw).hexdigest()\n",
    "app/server.py": "def serve(port):\n    '''Start the HTTP server.'''\n    return port\n",
    "docs/guide.md": "# Guide\n\nRun the server with serve(8080).\n",
}


def indexing_service(
    store: ChunkStore, files: dict[str, str], dimension: int = 64
) -> IndexingService:
    """An indexing service over ``files`` (at ``/repo``) with a hashing embedder."""
    tree = InMemorySourceTree({"/repo": {k: v.encode() for k, v in files.items()}})
    counter = TiktokenCounter()
    return IndexingService(
        store=store,
        source=tree,
        chunker=TreeSitterChunker(counter),
        tokens=counter,
        embedder=HashingEmbedder(dimension, inline=False),  # as a model: two layers
        chunking_pool=THREADS,
    )


def core_sources() -> dict[str, str]:
    """A real corpus: the sources of ``core``, by path."""
    src = Path(__file__).resolve().parents[2] / "src" / "codebase_core"
    return {p.relative_to(src).as_posix(): p.read_text() for p in src.rglob("*.py")}


# --- what a process keeps, and the statements it sends (test_postgres_changes.py and
# test_postgres_postings_cache.py) --------------------------------------------------------


def statements(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements run on ``db``'s pooled connections from now on."""
    seen: list[str] = []
    original = db.connection

    def connection(*args: Any, **kwargs: Any) -> Any:
        cm = original(*args, **kwargs)

        class Recorded:
            async def __aenter__(self) -> Any:
                conn = await cm.__aenter__()
                return Spy(conn, seen)

            async def __aexit__(self, *exc: object) -> Any:
                return await cm.__aexit__(*exc)

        return Recorded()

    monkeypatch.setattr(db, "connection", connection)
    return seen


class Spy:
    """A connection whose statements are recorded."""

    def __init__(self, conn: Any, seen: list[str]) -> None:
        self._conn = conn
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._conn, name)
        if name in {"fetch", "fetchrow", "fetchval", "execute"}:

            async def recorded(query: str, *args: Any, **kwargs: Any) -> Any:
                self._seen.append(" ".join(query.split())[:60])
                return await attr(query, *args, **kwargs)

            return recorded
        return attr


async def until(check: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    for _ in range(int(timeout_s / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not within {timeout_s} s: {what}")


async def listening(store: PgChunkStore) -> Any:
    """The store's token, once its database listens for changes."""
    ws = await store.workspace()
    feed = store._db.changes
    feed.token(ws.schema)
    await until(lambda: feed.listening, "listening")
    token = feed.token(ws.schema)
    assert token is not None
    return token
