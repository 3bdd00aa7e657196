"""RepositoryCatalog contract (the chunk store's repositories): every store adapter passes it."""

from __future__ import annotations

import pytest

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import ModelMismatch, RepositoryNotFound
from codebase_mcp_search.core.ports import (
    ChunkRetrieval,
    ChunkStore,
    ChunkWriter,
    EmbeddingCache,
    FileSnapshots,
    IndexStore,
    RepositoryCatalog,
    SearchStore,
)
from tests.contract.store_data import NO_FILTER, seed
from tests.factories import file_batch, needs_forced_reindex, repo


def test_is_a_chunk_store_of_every_role(chunk_store: ChunkStore) -> None:
    for role in (
        RepositoryCatalog,
        FileSnapshots,
        ChunkWriter,
        ChunkRetrieval,
        EmbeddingCache,
        IndexStore,
        SearchStore,
        ChunkStore,
    ):
        assert isinstance(chunk_store, role), role.__name__


async def test_repositories_round_trip_with_live_counts(chunk_store: ChunkStore) -> None:
    await seed(chunk_store)
    r1 = await chunk_store.get_repository("r1")
    assert (r1.name, r1.path, r1.file_count, r1.chunk_count) == ("one", "/repos/r1", 4, 6)
    found = await chunk_store.find_repository("/repos/r2")
    assert found is not None and found.id == "r2" and found.chunk_count == 1
    assert await chunk_store.find_repository("/nowhere") is None
    assert [r.name for r in await chunk_store.list_repositories()] == ["one", "two"]


async def test_a_repository_keeps_the_analyser_version_of_its_terms(
    chunk_store: ChunkStore,
) -> None:
    await chunk_store.save_repository(repo())
    assert (await chunk_store.get_repository("r1")).analyser_version == lexical.ANALYSER_VERSION
    older = repo("r2", "/repos/r2", "two").model_copy(update={"analyser_version": 1})
    await chunk_store.save_repository(older)
    await chunk_store.replace_files("r2", [file_batch("r2", "a.py", ["x = 1"])])
    found = await chunk_store.find_repository("/repos/r2")
    assert found is not None and found.analyser_version == 1
    listed = {r.id: r.analyser_version for r in await chunk_store.list_repositories()}
    assert listed == {"r1": lexical.ANALYSER_VERSION, "r2": 1}


async def test_unknown_repository_raises(chunk_store: ChunkStore) -> None:
    with pytest.raises(RepositoryNotFound):
        await chunk_store.get_repository("missing")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.delete_repository("missing")
    with pytest.raises(RepositoryNotFound):
        await chunk_store.replace_files("missing", [file_batch("missing", "a.py", ["x = 1"])])


async def test_one_embedding_model_per_store(chunk_store: ChunkStore) -> None:
    with_model = repo().model_copy(update={"embedding_model": "m1", "embedding_dimension": 2})
    await chunk_store.save_repository(with_model)
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])]
    )
    other = repo("r2", "/repos/r2", "r2").model_copy(
        update={"embedding_model": "m2", "embedding_dimension": 2}
    )
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await chunk_store.save_repository(other)
    # The only holder may switch: its old vectors are dropped, not mixed.
    await chunk_store.save_repository(with_model.model_copy(update={"embedding_model": "m2"}))
    hits, total = await chunk_store.vector_search([0.6, 0.8], NO_FILTER, 5)
    assert hits == [] and total == 0


async def test_a_repository_without_vectors_may_gain_the_project_model(
    chunk_store: ChunkStore,
) -> None:
    m1 = {"embedding_model": "m1", "embedding_dimension": 2}
    await chunk_store.save_repository(repo().model_copy(update=m1))
    await chunk_store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def a():\n    return 1"], [[0.6, 0.8]])]
    )
    # Indexed without an embedder beside it: allowed, and then it may take the same model
    # (an incremental run adds its vectors), but not another one.
    lexical_only = repo("r2", "/repos/r2", "r2")
    await chunk_store.save_repository(lexical_only)
    await chunk_store.replace_files("r2", [file_batch("r2", "b.py", ["def b():\n    return 2"])])
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await chunk_store.save_repository(
            lexical_only.model_copy(update={"embedding_model": "m2", "embedding_dimension": 2})
        )
    await chunk_store.save_repository(lexical_only.model_copy(update=m1))
    await chunk_store.replace_files(
        "r2", [file_batch("r2", "b.py", ["def b():\n    return 2"], [[0.8, 0.6]])]
    )
    hits, total = await chunk_store.vector_search([0.8, 0.6], NO_FILTER, 5)
    assert total == 2 and hits[0].chunk.repository_id == "r2"
    assert {r.embedding_model for r in await chunk_store.list_repositories()} == {"m1"}


async def test_a_repository_whose_vectors_are_being_built_holds_its_model(
    chunk_store: ChunkStore,
) -> None:
    # Its lexical layer is written, no vector yet: it is still indexed with m1, and its
    # semantic layer will be m1's. Another model beside it is refused as if it held them.
    m1 = {"embedding_model": "m1", "embedding_dimension": 2}
    await chunk_store.save_repository(repo().model_copy(update=m1))
    await chunk_store.replace_files("r1", [file_batch("r1", "a.py", ["def a():\n    return 1"])])
    assert (await chunk_store.get_repository("r1")).vectors_missing == 1
    other = repo("r2", "/repos/r2", "r2").model_copy(
        update={"embedding_model": "m2", "embedding_dimension": 3}
    )
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await chunk_store.save_repository(other)
    # A repository registered with a model but holding nothing yet blocks nobody.
    await chunk_store.delete_repository("r1")
    await chunk_store.save_repository(repo().model_copy(update=m1))
    await chunk_store.save_repository(other)
