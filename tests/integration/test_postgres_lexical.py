"""Postgres lexical search: BM25 as the in-memory reference ranks it, and a plan that holds
before the statistics tables are first analysed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store import lexical_search
from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.rows import term_key
from codebase_mcp_search.adapters.postgres.chunk_store.terms_read import (
    FILTER_PARAMS,
    PACKED_MAX_GONE,
    PACKED_MAX_WRITES,
    TERMS_FILTERED,
)
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import IndexRequest, SearchFilters
from tests.integration.pg_helpers import NO_FILTER, core_sources, indexing_service


@pytest.mark.parametrize("threaded", [False, True])
async def test_lexical_top10_matches_memory_on_a_real_corpus(
    db: PgDatabase, project: str, threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threaded:  # scored in a worker thread, as a search over very many postings is
        monkeypatch.setattr(lexical_search, "THREAD_POSTINGS", 0)
    files = core_sources()
    pg, mem = PgChunkStore(db, project), InMemoryChunkStore()
    r1 = await indexing_service(pg, files).index(IndexRequest(root="/repo"))
    r2 = await indexing_service(mem, files).index(IndexRequest(root="/repo"))
    assert r1.chunks_created == r2.chunks_created > 50
    for q in ("parse task status", "BM25 upper bound", "cancellation token", "Repository"):
        for flt in (NO_FILTER, SearchFilters(directory="services")):
            terms = lexical.query_terms(q)
            a, ta = await pg.lexical_search(terms, flt, 10)
            b, tb = await mem.lexical_search(terms, flt, 10)
            assert ta == tb
            assert [(h.chunk.file_path, h.chunk.start_line) for h in a] == [
                (h.chunk.file_path, h.chunk.start_line) for h in b
            ]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-9)


async def test_lexical_plan_sees_one_corpus_stats_row_before_any_analyze(
    db: PgDatabase, project: str
) -> None:
    """The planner's guess for the never-analysed one-row table must not multiply the
    per-term rows: it once made a fresh index hash all postings to disk (0.5 s a search)."""
    store = PgChunkStore(db, project)
    await indexing_service(store, core_sources()).index(IndexRequest(root="/repo"))
    ws = await store.workspace()
    keys = [term_key(t) for t in lexical.query_terms("parse task status")]
    flt = SqlFilter(SearchFilters(directory="services"), FILTER_PARAMS)
    sql = TERMS_FILTERED.at(ws.schema, filter=flt.sql)
    params = (keys, PACKED_MAX_GONE, PACKED_MAX_WRITES, -1, *flt.params)
    async with db.connection() as conn:
        never = await conn.fetchval(
            "SELECT reltuples < 0 FROM pg_class WHERE oid = $1::regclass",
            f"{ws.quoted}.corpus_stats",
        )
        plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params)

    def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    w = next(n for n in nodes(json.loads(plan)[0]["Plan"]) if n.get("Subplan Name") == "CTE w")
    assert never  # the case this guards: autovacuum has not come by yet
    assert w["Plan Rows"] <= len(keys)
