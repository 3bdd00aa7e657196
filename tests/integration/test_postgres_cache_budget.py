"""Every project's caches in one process against one budget, on real Postgres: searches of
several projects fill their caches (chunks, postings, vector copies, filter matches,
repository lists) and the bytes accounted never pass the budget; dropping a project frees
what its caches held; the container gives the setting to the database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.cache_ledger import MIB, CacheLedger
from codebase_mcp_search.adapters.postgres.chunk_store.vector_copy import VectorCopy
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import IndexRequest
from codebase_mcp_search.entrypoints.container import build_container
from codebase_mcp_search.entrypoints.projects import resolved
from codebase_mcp_search.entrypoints.settings import Settings
from tests.conftest import drop_projects_async, new_project_id
from tests.integration.pg_helpers import (
    NO_FILTER,
    core_sources,
    indexing_service,
    listening,
    until,
)

QUERIES = ("parse task status", "BM25 upper bound", "cancellation token", "Repository")
# Less than the three projects' caches would hold (about 160 kB each).
BUDGET = 300_000

pytestmark = pytest.mark.usefixtures("no_trust_window")


@pytest.fixture
async def small(pg_url: str, tmp_path: Path) -> AsyncIterator[tuple[PgDatabase, list[str]]]:
    """A database with a cache budget of ``BUDGET`` bytes, and three fresh projects."""
    projects = [new_project_id() for _ in range(3)]
    database = PgDatabase(pg_url, data_dir=tmp_path)
    database.cache_ledger = CacheLedger(BUDGET)
    yield database, projects
    await database.close()
    await drop_projects_async(pg_url, projects)


async def test_the_caches_of_every_project_stay_within_one_budget_and_a_drop_frees_them(
    small: tuple[PgDatabase, list[str]],
) -> None:
    db, projects = small
    ledger = db.cache_ledger
    files = core_sources()
    stores = [PgChunkStore(db, p) for p in projects]
    for store in stores:
        indexing = indexing_service(store, files)
        await indexing.index(IndexRequest(root="/repo"))
        await indexing.build_vectors(IndexRequest(root="/repo"))
        await listening(store)
    rng = np.random.default_rng(3)
    directory = NO_FILTER.model_copy(update={"directory": "services"})
    peak: dict[str, int] = dict.fromkeys(projects, 0)
    for _round in range(3):
        for store in stores:
            for q in QUERIES:
                await store.list_repositories()
                hits, _ = await store.lexical_search(lexical.query_terms(q), NO_FILTER, 10)
                await store.hit_contexts([h.chunk for h in hits])
                vector = rng.normal(size=64).tolist()
                await store.vector_search(vector, NO_FILTER, 10)
                await store.vector_search(vector, directory, 10)
                assert ledger.used <= ledger.budget == BUDGET
                for pid, nbytes in ledger.by_project().items():
                    peak[pid] = max(peak[pid], nbytes)
            await asyncio.sleep(0.05)  # a vector copy's read, in the background
            assert ledger.used <= ledger.budget
    # Every project held something at some point, and the three did not all fit at once:
    # the budget took bytes back.
    assert all(peak[p] > 0 for p in projects)
    assert sum(peak.values()) > ledger.budget
    # The last project's vectors copied into the process: accounted too, within the budget.
    copy = stores[-1]._vectors
    assert isinstance(copy, VectorCopy)
    vector = rng.normal(size=64).tolist()
    for _ in range(2):
        await stores[-1].vector_search(vector, NO_FILTER, 10)
    await until(lambda: copy.held is not None, "a copy of the vectors")
    assert copy.held is not None
    assert copy._account.bytes == copy.held.nbytes > 0
    assert ledger.used <= ledger.budget
    held = ledger.by_project()
    gone, kept = projects[-1], projects[0]
    assert held[gone] > 0  # searched last: the most recently used
    await db.drop_workspace(gone)
    after = ledger.by_project()
    assert after[gone] == 0 and copy.held is None
    assert after[kept] == held[kept]
    assert ledger.used == sum(after.values())


async def test_the_container_gives_the_budget_to_the_database(tmp_path: Path) -> None:
    settings = Settings(
        store="postgres",
        database_url="postgresql://nobody@/none",
        data_dir=tmp_path,
        cache_budget_mb=3,
    )
    stores = await resolved(build_container(settings).project_stores())
    try:
        assert stores.database is not None
        assert stores.database.cache_ledger.budget == 3 * MIB
    finally:
        assert stores.database is not None
        await stores.database.close()
