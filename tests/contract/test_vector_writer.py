"""VectorWriter contract (the semantic layer: vectors stored after the lexical layer wrote the
chunks without them), and how the catalog counts them: every store adapter passes it."""

from __future__ import annotations

import asyncio

import pytest

from codebase_mcp_search.core.errors import ModelMismatch, RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.ports import ChunkStore, VectorWriter
from tests.contract.store_data import NO_FILTER
from tests.factories import file_batch, repo

MODEL = {"embedding_model": "m1", "embedding_dimension": 2}


async def _lexical(store: ChunkStore) -> None:
    """Repository r1 of model m1, two files written without vectors (the lexical layer)."""
    await store.save_repository(repo().model_copy(update=MODEL))
    await store.replace_files(
        "r1",
        [
            file_batch("r1", "a.py", ["def a():\n    return 1", "def b():\n    return 2"]),
            file_batch("r1", "b.py", ["def c():\n    return 3"]),
        ],
    )


async def test_chunks_written_without_vectors_wait_in_the_backlog(chunk_store: ChunkStore) -> None:
    assert isinstance(chunk_store, VectorWriter)
    await _lexical(chunk_store)
    (listed,) = await chunk_store.list_repositories()
    assert (listed.chunk_count, listed.vector_count, listed.vectors_missing) == (3, 0, 3)
    backlog = await chunk_store.vector_backlog("r1", 10)
    assert [c.content.split("(")[0] for c in backlog] == ["def a", "def b", "def c"]  # oldest first
    assert [c.id for c in await chunk_store.vector_backlog("r1", 2)] == [c.id for c in backlog[:2]]
    assert await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 10) == ([], 0)
    ids = [c.id for c in backlog]
    assert await chunk_store.without_vectors([*ids, "unknown"]) == set(ids)


async def test_stored_vectors_are_searched_counted_and_cached(chunk_store: ChunkStore) -> None:
    await _lexical(chunk_store)
    first, second, third = await chunk_store.vector_backlog("r1", 10)
    stored = await chunk_store.set_vectors("r1", {first.id: [1.0, 0.0], second.id: [0.0, 1.0]})
    assert stored == 2
    repository = await chunk_store.get_repository("r1")
    assert (repository.vector_count, repository.vectors_missing) == (2, 1)
    assert [c.id for c in await chunk_store.vector_backlog("r1", 10)] == [third.id]
    assert await chunk_store.without_vectors([first.id, third.id]) == {third.id}
    hits, total = await chunk_store.vector_search([1.0, 0.1], NO_FILTER, 10)
    assert total == 2 and hits[0].chunk.id == first.id
    cached = await chunk_store.cached_embeddings("m1", [first.content_hash, third.content_hash])
    assert list(cached) == [first.content_hash]
    assert cached[first.content_hash] == pytest.approx([1.0, 0.0])
    # A chunk holding a vector keeps it; an id not (or no longer) indexed is skipped.
    assert await chunk_store.set_vectors("r1", {first.id: [0.0, 1.0], "gone": [1.0, 0.0]}) == 0
    hits, _ = await chunk_store.vector_search([1.0, 0.0], NO_FILTER, 1)
    assert hits[0].chunk.id == first.id and hits[0].score == pytest.approx(1.0)


async def test_a_vector_of_a_replaced_chunk_is_dropped(chunk_store: ChunkStore) -> None:
    await _lexical(chunk_store)
    backlog = await chunk_store.vector_backlog("r1", 10)
    edited = file_batch("r1", "b.py", ["def c():\n    return 30"])
    await chunk_store.replace_files("r1", [edited])
    assert await chunk_store.set_vectors("r1", {c.id: [1.0, 0.0] for c in backlog}) == 2
    (left,) = await chunk_store.vector_backlog("r1", 10)
    assert left.id == edited.chunks[0].id
    assert (await chunk_store.get_repository("r1")).vector_count == 2


async def test_counts_follow_partial_writes_and_deletes(chunk_store: ChunkStore) -> None:
    await chunk_store.save_repository(repo().model_copy(update=MODEL))
    # Vectors for some chunks of a file (found in the embedding cache), not for the others.
    partial = file_batch("r1", "a.py", ["def a(): pass", "def b(): pass"], [[1.0, 0.0], None])
    await chunk_store.replace_files("r1", [partial])
    repository = await chunk_store.get_repository("r1")
    assert (repository.chunk_count, repository.vector_count) == (2, 1)
    assert [c.id for c in await chunk_store.vector_backlog("r1", 5)] == [partial.chunks[1].id]
    await chunk_store.delete_files("r1", ["a.py"])
    repository = await chunk_store.get_repository("r1")
    assert (repository.chunk_count, repository.vector_count) == (0, 0)


async def test_vectors_of_another_size_are_refused(chunk_store: ChunkStore) -> None:
    await _lexical(chunk_store)
    first, second, _ = await chunk_store.vector_backlog("r1", 10)
    await chunk_store.set_vectors("r1", {first.id: [1.0, 0.0]})
    with pytest.raises(ModelMismatch):
        await chunk_store.set_vectors("r1", {second.id: [1.0, 0.0, 0.0]})
    assert (await chunk_store.get_repository("r1")).vector_count == 1
    with pytest.raises(RepositoryNotFound):
        await chunk_store.set_vectors("nope", {second.id: [1.0, 0.0]})


async def test_the_two_layers_lock_apart(chunk_store: ChunkStore) -> None:
    await _lexical(chunk_store)
    async with chunk_store.vectors_lock("r1", wait=False):
        # A lexical run never waits for a run of the semantic layer.
        async with chunk_store.indexing_lock("r1", wait=False):
            pass
        with pytest.raises(RepositoryBusy):
            async with chunk_store.vectors_lock("r1", wait=False):
                pass
        waiting = asyncio.ensure_future(_hold(chunk_store))
        await asyncio.sleep(0.1)
        assert not waiting.done()
    await asyncio.wait_for(waiting, 5)


async def _hold(store: ChunkStore) -> None:
    async with store.vectors_lock("r1", wait=True):
        pass
