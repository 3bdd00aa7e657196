"""Postgres projects: schema names, isolation between projects, and one embedding model (and
dimension) per project."""

from __future__ import annotations

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase, PgTaskRepo, schema_name
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import (
    ModelMismatch,
    ValidationFailed,
)
from codebase_mcp_search.core.models import IndexRequest, Task, utcnow
from codebase_mcp_search.core.services import IndexingService
from tests.conftest import drop_projects_async, new_project_id
from tests.factories import THREADS, needs_forced_reindex
from tests.integration.pg_helpers import FILES, NO_FILTER, indexing_service


def test_schema_names_are_bounded_lowercase_and_distinct() -> None:
    long_id = "A" * 64
    name = schema_name(long_id)
    assert len(name.encode()) <= 63 and name == name.lower()
    assert name.startswith("cb_proj_aaaa") and name.rsplit("_", 1)[1].isalnum()
    assert schema_name("My App") != schema_name("my_app") != schema_name("my-app")
    assert schema_name("default").startswith("cb_proj_default_")


@pytest.mark.parametrize("bad", ["", "x" * 65, "a;DROP SCHEMA public", "naïve", "a/b", "a.b"])
def test_bad_project_ids_are_rejected_with_the_rule(bad: str) -> None:
    with pytest.raises(ValidationFailed) as err:
        schema_name(bad)
    assert err.value.code == "VALIDATION_ERROR" and "project_id" in str(err.value)
    assert "1-64" in str(err.value)


async def test_projects_are_isolated(db: PgDatabase, pg_url: str) -> None:
    a, b = new_project_id(), new_project_id()
    try:
        store_a, store_b = PgChunkStore(db, a), PgChunkStore(db, b)
        await indexing_service(store_a, FILES).index(IndexRequest(root="/repo"))
        now = utcnow()
        await PgTaskRepo(db, a).add(
            Task(id="t1", title="only in a", created_at=now, updated_at=now)
        )
        assert [r.path for r in await store_a.list_repositories()] == ["/repo"]
        assert await store_b.list_repositories() == []
        terms = lexical.query_terms("hash password")
        hits_a, _ = await store_a.lexical_search(terms, NO_FILTER, 10)
        hits_b, total_b = await store_b.lexical_search(terms, NO_FILTER, 10)
        assert hits_a and hits_b == [] and total_b == 0
        assert (await PgTaskRepo(db, b).list()).total_count == 0
        assert (await store_a.workspace()).schema != (await store_b.workspace()).schema
    finally:
        await drop_projects_async(pg_url, [a, b])


async def test_dimension_mismatch_is_refused_with_the_fix(db: PgDatabase, project: str) -> None:
    store = PgChunkStore(db, project)
    first = indexing_service(store, FILES, dimension=64)
    await first.index(IndexRequest(root="/repo"))
    await first.build_vectors(IndexRequest(root="/repo"))
    other = InMemorySourceTree({"/other": {"x.py": b"def other():\n    return 1\n"}})
    counter = TiktokenCounter()
    service = IndexingService(
        store=store,
        source=other,
        chunker=TreeSitterChunker(counter),
        tokens=counter,
        embedder=HashingEmbedder(32),
        chunking_pool=THREADS,
    )
    with pytest.raises(ModelMismatch) as err:
        await service.index(IndexRequest(root="/other"))
    assert needs_forced_reindex(err.value) and "hash-64" in str(err.value)
    with pytest.raises(ModelMismatch):
        await store.vector_search([0.1] * 32, NO_FILTER, 5)
    # Nothing of the refused run was written.
    assert [r.path for r in await store.list_repositories()] == ["/repo"]


async def test_forced_reindex_switches_the_only_repository_to_a_new_dimension(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project)
    first = indexing_service(store, FILES, dimension=64)
    await first.index(IndexRequest(root="/repo"))
    await first.build_vectors(IndexRequest(root="/repo"))
    switched = indexing_service(store, FILES, dimension=32)
    result = await switched.index(IndexRequest(root="/repo", force=True))
    # The old vectors are dropped with the switch: every chunk waits for a new one.
    assert result.vectors_missing == result.chunks_created > 0
    built = await switched.build_vectors(IndexRequest(root="/repo"))
    assert built.chunks_embedded == result.chunks_created
    hits, total = await store.vector_search(
        await HashingEmbedder(32).embed_query("hash password"), NO_FILTER, 3
    )
    assert hits and total == result.chunks_created
    assert (await store.get_repository(result.repository_id)).embedding_model == "hash-32"
