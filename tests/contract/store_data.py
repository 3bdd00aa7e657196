"""Data shared by the chunk store's contract suites."""

from __future__ import annotations

from codebase_mcp_search.core.models import SearchFilters
from codebase_mcp_search.core.ports import ChunkStore
from tests.factories import file_batch, repo

NO_FILTER = SearchFilters()


async def seed(store: ChunkStore) -> None:
    """Two repositories: four files of r1 (paths that test filters' escaping), one of r2."""
    await store.save_repository(repo("r1", "/repos/r1", "one"))
    await store.save_repository(repo("r2", "/repos/r2", "two"))
    await store.replace_files(
        "r1",
        [
            file_batch(
                "r1",
                "src/auth/login.py",
                ["def login(user, password):", "    check"],
                vectors=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            ),
            file_batch(
                "r1",
                "src/a_b/util.py",
                ["def parse_config(path): return path"],
                vectors=[[0.6, 0.8, 0.0]],
            ),
            file_batch(
                "r1",
                "src/aXb/other.py",
                ["def parse_json(text): return text"],
                vectors=[[0.0, 0.0, 1.0]],
            ),
            file_batch(
                "r1",
                "docs/100%/guide.md",
                ["# Login guide", "how to login"],
                vectors=[[0.8, 0.6, 0.0], [0.0, 0.6, 0.8]],
            ),
        ],
    )
    await store.replace_files(
        "r2",
        [file_batch("r2", "main.go", ["func login() {}"], vectors=[[0.9, 0.0, 0.436]])],
    )
