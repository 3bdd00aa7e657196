"""ChunkWriter and FileSnapshots contract (an indexing run's writes, and what they leave
indexed of each file): every store adapter passes it."""

from __future__ import annotations

import pytest

from codebase_mcp_search.core.errors import RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.ports import (
    ChunkStore,
)
from tests.contract.store_data import NO_FILTER, seed
from tests.factories import file_batch


async def test_file_hashes_texts_and_chunks(chunk_store: ChunkStore) -> None:
    await seed(chunk_store)
    hashes = await chunk_store.file_hashes("r1")
    assert sorted(hashes) == [
        "docs/100%/guide.md",
        "src/aXb/other.py",
        "src/a_b/util.py",
        "src/auth/login.py",
    ]
    some = await chunk_store.file_hashes("r1", ["src/a_b/util.py", "nope.py", "src/a%b/x.py"])
    assert some == {"src/a_b/util.py": hashes["src/a_b/util.py"]}
    assert await chunk_store.file_hashes("r1", []) == {}
    texts = await chunk_store.file_texts("r1", ["src/auth/login.py", "nope.py"])
    assert texts == {"src/auth/login.py": "def login(user, password):\n    check"}
    chunks = await chunk_store.chunks("r1")  # ordered by code point ('X' < '_')
    assert [(c.file_path, c.start_line) for c in chunks] == [
        ("docs/100%/guide.md", 1),
        ("docs/100%/guide.md", 2),
        ("src/aXb/other.py", 1),
        ("src/a_b/util.py", 1),
        ("src/auth/login.py", 1),
        ("src/auth/login.py", 2),
    ]


async def test_replace_leaves_no_trace_of_old_chunks(chunk_store: ChunkStore) -> None:
    await seed(chunk_store)
    await chunk_store.replace_files(
        "r1",
        [file_batch("r1", "src/auth/login.py", ["def logout(): pass"], vectors=[[0.0, 1.0, 0.0]])],
    )
    chunks = [c for c in await chunk_store.chunks("r1") if c.file_path == "src/auth/login.py"]
    assert [c.content for c in chunks] == ["def logout(): pass"]
    hits, total = await chunk_store.lexical_search(["password"], NO_FILTER, 10)
    assert hits == [] and total == 0
    vec_hits, vec_total = await chunk_store.vector_search([1.0, 0.0, 0.0], NO_FILTER, 50)
    assert vec_total == 6
    assert all(h.chunk.content != "def login(user, password):" for h in vec_hits)


async def test_delete_files_and_repository(chunk_store: ChunkStore) -> None:
    await seed(chunk_store)
    assert await chunk_store.delete_files("r1", ["src/auth/login.py", "absent.py"]) == 1
    assert "src/auth/login.py" not in await chunk_store.file_hashes("r1")
    hits, _ = await chunk_store.lexical_search(["password"], NO_FILTER, 10)
    assert hits == []
    await chunk_store.delete_repository("r1")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.get_repository("r1")
    hits, total = await chunk_store.lexical_search(["login"], NO_FILTER, 10)
    assert [h.chunk.repository_id for h in hits] == ["r2"] and total == 1


async def test_indexing_lock_without_wait_refuses_a_held_repository(
    chunk_store: ChunkStore,
) -> None:
    async with chunk_store.indexing_lock("r1", wait=False):
        with pytest.raises(RepositoryBusy):
            async with chunk_store.indexing_lock("r1", wait=False):
                pass
    async with chunk_store.indexing_lock("r1", wait=False):  # released
        pass
