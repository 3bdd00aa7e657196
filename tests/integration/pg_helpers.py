"""Helpers shared by the Postgres integration tests (test_postgres_*.py)."""

from __future__ import annotations

from pathlib import Path

from adapters.hashing import HashingEmbedder
from adapters.memory import InMemorySourceTree
from adapters.tokens import TiktokenCounter
from adapters.treesitter import TreeSitterChunker
from codebase_core.models import SearchFilters
from codebase_core.ports import ChunkStore
from codebase_core.services import IndexingService

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
        embedder=HashingEmbedder(dimension),
    )


def core_sources() -> dict[str, str]:
    """A real corpus: the sources of ``codebase_core``, by path."""
    src = Path(__file__).resolve().parents[2] / "src" / "codebase_core"
    return {p.relative_to(src).as_posix(): p.read_text() for p in src.rglob("*.py")}
