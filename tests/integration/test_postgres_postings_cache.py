"""Lexical search from the postings kept in the process: the same top chunks and scores as the
reference, no statement once the query's terms are held, and nothing stale once a write is
seen (or a read finds another generation)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store import lexical_search
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import HeldPostings
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import IndexRequest, ScoredChunk, SearchFilters
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import (
    NO_FILTER,
    core_sources,
    indexing_service,
    listening,
    statements,
)

QUERIES = ("parse task status", "BM25 upper bound", "cancellation token", "Repository")


pytestmark = pytest.mark.usefixtures("no_trust_window")


def _blocks(seen: list[str]) -> list[str]:
    """The reads of postings blocks among ``seen`` (not those of chunk rows)."""
    return [s for s in seen if s.startswith("WITH st AS")]


def held_postings(store: PgChunkStore) -> HeldPostings:
    lexical = store._lexical
    assert isinstance(lexical, HeldPostings)
    return lexical


def _top(hits: list[ScoredChunk]) -> list[tuple[str, int, float]]:
    return [(h.chunk.file_path, h.chunk.start_line, h.score) for h in hits]


@pytest.mark.parametrize("threaded", [False, True])
async def test_held_postings_rank_as_the_reference_does(
    db: PgDatabase, project: str, threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threaded:  # read and summed in a worker thread, as very many postings are
        monkeypatch.setattr(lexical_search, "THREAD_POSTINGS", 0)
    files = core_sources()
    pg, mem = PgChunkStore(db, project), InMemoryChunkStore()
    await indexing_service(pg, files).index(IndexRequest(root="/repo"))
    await indexing_service(mem, files).index(IndexRequest(root="/repo"))
    await listening(pg)
    for _rounds in range(2):  # the terms read, then held
        for q in QUERIES:
            terms = lexical.query_terms(q)
            a, ta = await pg.lexical_search(terms, NO_FILTER, 10)
            b, tb = await mem.lexical_search(terms, NO_FILTER, 10)
            assert ta == tb > 0
            assert [x[:2] for x in _top(a)] == [x[:2] for x in _top(b)]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-9)
    assert held_postings(pg).state is not None
    seen = statements(db, monkeypatch)
    for q in QUERIES:
        await pg.lexical_search(lexical.query_terms(q), NO_FILTER, 10)
    assert seen == []  # every term held, every chosen chunk held
    # A query sharing a term with the earlier ones reads only its new term.
    await pg.lexical_search(["task", "zebra_never_written"], NO_FILTER, 10)
    assert len(_blocks(seen)) == 1
    seen.clear()
    hits, total = await pg.lexical_search(["zebra_never_written"], NO_FILTER, 10)
    assert (hits, total, seen) == ([], 0, [])  # a term without postings is held as none


async def test_a_write_seen_replaces_what_was_held(
    db: PgDatabase, other: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, theirs = PgChunkStore(db, project), PgChunkStore(other, project)
    await store.save_repository(repo("r1"))
    await store.replace_files(
        "r1", [file_batch("r1", "a.py", ["def alpha():\n    return 'gamma'"])]
    )
    await listening(store)
    hits, total = await store.lexical_search(["gamma"], NO_FILTER, 10)
    assert total == 1 and hits[0].chunk.file_path == "a.py"
    # This process's write: the next search reads the terms again.
    await store.replace_files(
        "r1", [file_batch("r1", "b.py", ["def beta():\n    return 'gamma gamma'"])]
    )
    hits, total = await store.lexical_search(["gamma"], NO_FILTER, 10)
    assert total == 2 and hits[0].chunk.file_path == "b.py"
    # Another process's write: once its notification arrives.
    ws = await store.workspace()
    token = db.changes.token(ws.schema)
    await theirs.delete_files("r1", ["b.py"])
    for _ in range(500):
        if db.changes.token(ws.schema) != token:
            break
        await asyncio.sleep(0.02)
    hits, total = await store.lexical_search(["gamma"], NO_FILTER, 10)
    assert total == 1 and [h.chunk.file_path for h in hits] == ["a.py"]


async def test_a_new_token_keeps_the_terms_of_an_unchanged_generation(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    await store.replace_files(
        "r1",
        [file_batch("r1", "a.py", ["def alpha():\n    return 'gamma delta'"])],
    )
    await listening(store)
    await store.lexical_search(["gamma", "delta"], NO_FILTER, 10)
    held = held_postings(store).state
    assert held is not None
    ws = await store.workspace()
    db.changes.bump(ws.schema)  # a token moved on (as the trust window does) with no write
    seen = statements(db, monkeypatch)
    await store.lexical_search(["gamma"], NO_FILTER, 10)
    assert len(_blocks(seen)) == 1  # read once, found the same generation
    state = held_postings(store).state
    assert state is not None and state.generation == held.generation
    assert state.token != held.token
    seen.clear()
    await store.lexical_search(["delta"], NO_FILTER, 10)
    assert seen == []  # still held, under the new token


async def test_terms_of_two_generations_are_never_summed(
    db: PgDatabase, other: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose notice has not arrived yet: a term held of the old generation and one read
    of the new would mix. The whole query is read again instead."""
    store, theirs = PgChunkStore(db, project), PgChunkStore(other, project)
    await store.save_repository(repo("r1"))
    await store.replace_files("r1", [file_batch("r1", "a.py", ["def alpha():\n    return 1"])])
    await listening(store)
    await store.lexical_search(["alpha"], NO_FILTER, 10)
    # The other process's notices are not taken (its write stays unseen).
    feed = db.changes
    monkeypatch.setattr(feed, "bump", lambda schema: None)
    await theirs.replace_files(
        "r1", [file_batch("r1", "b.py", ["def alpha_beta():\n    alpha = 2\n    beta = alpha"])]
    )
    seen = statements(db, monkeypatch)
    hits, total = await store.lexical_search(["alpha", "beta"], NO_FILTER, 10)
    assert len(_blocks(seen)) == 2  # the new term, then both at the new generation
    assert total == 2 and hits[0].chunk.file_path == "b.py"
    # As a search of the database alone ranks (the other store's first: no token yet).
    want, want_total = await theirs.lexical_search(["alpha", "beta"], NO_FILTER, 10)
    assert held_postings(theirs).state is None
    assert _top(hits) == _top(want) and total == want_total


async def test_without_a_token_nothing_is_held(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    await store.replace_files("r1", [file_batch("r1", "a.py", ["def alpha():\n    pass"])])

    def no_token(schema: str) -> Any:
        return None

    monkeypatch.setattr(db.changes, "token", no_token)
    for _ in range(2):
        _hits, total = await store.lexical_search(["alpha"], NO_FILTER, 10)
        assert total == 1
    assert held_postings(store).state is None


async def test_a_narrow_filter_is_scored_from_the_held_terms_as_the_reference(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = core_sources()
    pg, mem = PgChunkStore(db, project), InMemoryChunkStore()
    await indexing_service(pg, files).index(IndexRequest(root="/repo"))
    await indexing_service(mem, files).index(IndexRequest(root="/repo"))
    await listening(pg)
    narrow = ["ranking/path_words.py", "services/search", "lexical.py"]
    for q in QUERIES:
        terms = lexical.query_terms(q)
        await pg.lexical_search(terms, NO_FILTER, 10)  # its terms held
        seen = statements(db, monkeypatch)
        for directory in narrow:
            flt = SearchFilters(directory=directory)
            a, ta = await pg.lexical_search(terms, flt, 5)
            b, tb = await mem.lexical_search(terms, flt, 5)
            assert ta == tb
            assert [x[:2] for x in _top(a)] == [x[:2] for x in _top(b)]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-9)
        # No postings read (filtered or not): the held terms cut to the filter's chunks.
        assert [s for s in seen if s.startswith("WITH")] == []  # TERMS, filtered or not
        monkeypatch.undo()


async def test_a_narrow_filter_never_scores_held_terms_of_another_generation(
    db: PgDatabase, other: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's write whose notice has not arrived: the filter's chunks are read of
    the new generation, the terms held are of the old; the filtered read answers instead."""
    store, theirs = PgChunkStore(db, project), PgChunkStore(other, project)
    await store.save_repository(repo("r1"))
    await store.replace_files("r1", [file_batch("r1", "a.py", ["def alpha():\n    return 1"])])
    await listening(store)
    await store.lexical_search(["alpha"], NO_FILTER, 10)
    monkeypatch.setattr(db.changes, "bump", lambda schema: None)  # its notice never taken
    await theirs.replace_files(
        "r1", [file_batch("r1", "a.py", ["def beta():\n    return 2", "alpha = 3"])]
    )
    hits, total = await store.lexical_search(["alpha"], SearchFilters(directory="a.py"), 10)
    assert total == 1 and [h.chunk.content for h in hits] == ["alpha = 3"]
