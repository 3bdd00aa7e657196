"""Packed postings (chunk_store.packing): a search that reads a project's common terms packed
gives exactly what reading them from the blocks gives (the same chunks, order, scores to the
last bit and count), after the build and after any write since (each corrected by what the
writes logged), including writes in flight while the build ran; a write that logs nothing
voids the build."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres import PgCaches, PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store import session as session_module
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import LexicalSearch
from codebase_mcp_search.adapters.postgres.chunk_store.packing import PackConfig, Packing
from codebase_mcp_search.adapters.postgres.chunk_store.rows import term_key
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import IndexRequest, SearchFilters
from tests.conftest import drop_projects, drop_projects_async, new_project_id
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import NO_FILTER, core_sources, indexing_service

# Every term of two postings or more packed, in a project of any size; never packed again
# by the writes of a test unless it asks.
PACKED = PackConfig(min_docs=1, min_df=2, rebuild_min=10**9, rebuild_share=1e9)
NEVER = PackConfig(min_docs=10**12)
QUERIES = (
    "parse task status",
    "return self",
    "def None",
    "cancellation token raise",
    "Repository chunk store search",
    "import from typing",
)


@pytest.fixture
def twin(pg_url: str) -> Iterator[str]:
    """A second project, written alike but never packed: the blocks' answers."""
    pid = new_project_id()
    yield pid
    drop_projects(pg_url, [pid])


# Filtered, packed terms are cut to the filter's chunks (their idf the project's).
FILTERS = (NO_FILTER, SearchFilters(directory="services"), SearchFilters(file_type="py"))


async def _answers(store: PgChunkStore, limit: int = 40) -> list[Any]:
    out = []
    for q in QUERIES:
        for flt in FILTERS:
            hits, total = await store.lexical_search(lexical.query_terms(q), flt, limit)
            found = [(h.chunk.file_path, h.chunk.start_line, h.score) for h in hits]
            out.append((q, flt, total, found))
    return out


async def _packed_terms(store: PgChunkStore, words: str) -> list[int] | None:
    """The query's terms the store's statement reads packed (None: none)."""
    reader = LexicalSearch(store._session, store._chunks)
    row, _ = await reader.read([term_key(t) for t in lexical.query_terms(words)])
    assert row is not None
    return None if row["p_terms"] is None else list(row["p_terms"])


def _stores(db: PgDatabase, project: str, twin: str) -> dict[str, PgChunkStore]:
    return {
        "packed": PgChunkStore(db, project, packing=PACKED),
        "packed-nocache": PgChunkStore(db, project, caches=PgCaches.off(), packing=PACKED),
        "blocks": PgChunkStore(db, twin, caches=PgCaches.off(), packing=NEVER),
    }


async def _same(stores: dict[str, PgChunkStore]) -> None:
    want = await _answers(stores["blocks"])
    for name in ("packed", "packed-nocache"):
        got = await _answers(stores[name])
        assert got == want, name
    assert all(total > 0 for _, flt, total, _ in want if flt == NO_FILTER)


async def test_packed_terms_rank_as_their_blocks_do(
    db: PgDatabase, project: str, twin: str
) -> None:
    files = core_sources()
    stores = _stores(db, project, twin)
    await indexing_service(stores["packed"], files).index(IndexRequest(root="/repo"))
    await indexing_service(stores["blocks"], files).index(IndexRequest(root="/repo"))
    # The index's optimize packed the common terms of one and not of the other.
    assert await _packed_terms(stores["packed"], "return self")
    assert await _packed_terms(stores["blocks"], "return self") is None
    await _same(stores)


async def test_writes_since_the_build_correct_it_exactly(
    db: PgDatabase, project: str, twin: str
) -> None:
    files = core_sources()
    stores = _stores(db, project, twin)
    for name in ("packed", "blocks"):
        await indexing_service(stores[name], files).index(IndexRequest(root="/repo"))
    paths = sorted(files)
    edited = {p: files[p].replace("self", "this").replace("return", "yield") for p in paths[:6]}
    edited.update({f"new/{i}.py": files[p] for i, p in enumerate(paths[6:12])})
    for p in paths[12:16]:
        edited[p] = ""  # emptied: its chunks deleted, nothing inserted
    for name in ("packed", "blocks"):
        svc = indexing_service(stores[name], {**files, **edited})
        await svc.index(IndexRequest(root="/repo"))
        repo_id = (await stores[name].list_repositories())[0].id
        await stores[name].delete_files(repo_id, paths[16:20])
    # Not packed again (the config never rebuilds): read packed and corrected.
    assert await _packed_terms(stores["packed"], "return self")
    await _same(stores)
    # Packed again from the writes' result, the logs emptied: the same answers.
    await Packing(db, project, PackConfig(min_docs=1, min_df=2, rebuild_min=0)).optimize()
    assert await _count(db, stores["packed"], "packed_inserts") == 0
    assert await _count(db, stores["packed"], "packed_gone") == 0
    await _same(stores)


async def _packed_twins(
    db: PgDatabase, project: str, stores: dict[str, PgChunkStore], files: dict[str, str]
) -> None:
    """Repository ``r1`` of ``files`` (one chunk each) written to the packed store and its
    twin, then packed."""
    for name in ("packed", "blocks"):
        await stores[name].save_repository(repo("r1"))
        await stores[name].replace_files(
            "r1", [file_batch("r1", p, [text]) for p, text in files.items()]
        )
    await Packing(db, project, PACKED).optimize()


async def _count(db: PgDatabase, store: PgChunkStore, table: str) -> int:
    ws = await store.workspace()
    async with db.connection() as conn:
        n: int = await conn.fetchval(f"SELECT count(*) FROM {ws.quoted}.{table}")
    return n


async def test_writes_in_flight_during_the_build_are_corrected(
    db: PgDatabase, project: str, twin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that took its seqs and deleted and inserted its chunks before the build's
    snapshot, and commits after it: the build sees none of it, and the log keeps all of it."""
    stores = _stores(db, project, twin)
    base = {f"m{i}.py": f"def f{i}(x):\n    return x + {i}  # common words\n" for i in range(40)}
    await _packed_twins(db, project, stores, base)
    change = [
        file_batch("r1", "m3.py", ["def f3(y):\n    return y  # fewer common words"]),
        file_batch("r1", "n1.py", ["def g(x):\n    return x + 1  # common words again"]),
    ]
    logged, release = asyncio.Event(), asyncio.Event()
    original = session_module.ProjectSession.log_inserts

    async def paused(self: Any, seqs: Any) -> None:
        await original(self, seqs)
        logged.set()
        await release.wait()

    monkeypatch.setattr(session_module.ProjectSession, "log_inserts", paused)
    write = asyncio.create_task(stores["packed"].replace_files("r1", change))
    await asyncio.wait_for(logged.wait(), 30)
    # The build runs beside the write, which holds its transaction open.
    await asyncio.wait_for(
        Packing(db, project, PackConfig(min_docs=1, min_df=2, rebuild_min=0)).optimize(), 60
    )
    release.set()
    await write
    monkeypatch.undo()
    await stores["blocks"].replace_files("r1", change)
    assert await _count(db, stores["packed"], "packed_inserts") == 1
    assert await _count(db, stores["packed"], "packed_gone") == 1
    words = "return common words"
    assert await _packed_terms(stores["packed"], words)
    for limit in (3, 100):
        want = await stores["blocks"].lexical_search(lexical.query_terms(words), NO_FILTER, limit)
        for name in ("packed", "packed-nocache"):
            got = await stores[name].lexical_search(lexical.query_terms(words), NO_FILTER, limit)
            assert _plain(got) == _plain(want), name


def _plain(found: Any) -> Any:
    hits, total = found
    return total, [(h.chunk.file_path, h.chunk.start_line, h.score) for h in hits]


async def test_a_write_that_logs_nothing_voids_the_build(
    db: PgDatabase, project: str, twin: str
) -> None:
    """An older version's write moves the generation without counting itself as logged: the
    packed terms are not read again until they are packed anew."""
    stores = _stores(db, project, twin)
    base = {f"m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(20)}
    await _packed_twins(db, project, stores, base)
    assert await _packed_terms(stores["packed"], "return")
    ws = await stores["packed"].workspace()
    async with db.connection() as conn, conn.transaction():
        # As a write before packing did: chunks and blocks deleted, nothing logged.
        await conn.execute(
            f"""WITH old AS (DELETE FROM {ws.quoted}.chunks WHERE file_path = 'm1.py'
                             RETURNING seq, doc_len)
                UPDATE {ws.quoted}.corpus_stats SET n_docs = n_docs - 1,
                    total_len = total_len - (SELECT sum(doc_len) FROM old),
                    generation = generation + 1"""
        )
        await conn.execute(
            f"DELETE FROM {ws.quoted}.postings WHERE first NOT IN "
            f"(SELECT seq FROM {ws.quoted}.chunks)"
        )
        await conn.execute(f"DELETE FROM {ws.quoted}.packed_gone")
    await stores["blocks"].delete_files("r1", ["m1.py"])
    assert await _packed_terms(stores["packed"], "return") is None
    await _same_for(stores, "return x")
    await Packing(db, project, PACKED).optimize()  # due again: packed anew
    assert await _packed_terms(stores["packed"], "return")
    await _same_for(stores, "return x")


async def _same_for(stores: dict[str, PgChunkStore], words: str) -> None:
    terms = lexical.query_terms(words)
    want = _plain(await stores["blocks"].lexical_search(terms, NO_FILTER, 50))
    for name in ("packed", "packed-nocache"):
        assert _plain(await stores[name].lexical_search(terms, NO_FILTER, 50)) == want, name


async def test_an_upgraded_workspace_is_packed_by_its_next_index(
    db: PgDatabase, project: str, twin: str
) -> None:
    """A workspace of version 13 holding an index (no packed tables, no ``logged``): opened
    by this version it is migrated and searched from its blocks; the next index run (nothing
    changed) packs it, and the packed answers are the blocks' answers."""
    files = core_sources()
    stores = _stores(db, project, twin)
    for name in ("packed", "blocks"):
        await indexing_service(stores[name], files).index(IndexRequest(root="/repo"))
    ws = await stores["packed"].workspace()
    async with db.connection() as conn, conn.transaction():
        for table in ("packed_build", "packed_terms", "packed_inserts", "packed_gone"):
            await conn.execute(f"DROP TABLE {ws.quoted}.{table}")
        await conn.execute(f"ALTER TABLE {ws.quoted}.corpus_stats DROP COLUMN logged")
        await conn.execute(f"DELETE FROM {ws.quoted}.schema_migrations WHERE version = 14")
        await conn.execute(
            "UPDATE codebase_mcp.projects SET schema_version = 13 WHERE id = $1", project
        )
    reopened = PgDatabase(db._url, data_dir=db._data_dir)
    try:
        upgraded = {
            **stores,
            "packed": PgChunkStore(reopened, project, packing=PACKED),
            "packed-nocache": PgChunkStore(
                reopened, project, caches=PgCaches.off(), packing=PACKED
            ),
        }
        await upgraded["packed"].list_repositories()  # migrates the workspace first
        assert await _packed_terms(upgraded["packed"], "return self") is None
        await _same(upgraded)
        result = await indexing_service(upgraded["packed"], files).index(IndexRequest(root="/repo"))
        assert result.files_indexed == 0
        assert await _packed_terms(upgraded["packed"], "return self")
        await _same(upgraded)
    finally:
        await reopened.close()


WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa")
FILE = st.tuples(
    st.integers(0, 7),  # which file
    st.lists(  # its chunks, each a few words
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        min_size=0,
        max_size=3,
    ),
)
ONE_DIRECTORY = SearchFilters(directory="a")
STEPS = st.lists(
    st.one_of(FILE, st.just("repack"), st.integers(0, 7).map(lambda i: ("delete", i))),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=st.lists(FILE, min_size=1, max_size=6), steps=STEPS)
async def test_any_writes_since_a_build_read_as_the_blocks(
    pg_url: str, tmp_path: Path, first: list[Any], steps: list[Any]
) -> None:
    """Files written, packed, then any writes, deletions and builds: after each step, every
    question reads (chunks, order, scores, count) as a project never packed reads it."""
    packed, twin = new_project_id(), new_project_id()
    db = PgDatabase(pg_url, data_dir=tmp_path)
    stores = _stores(db, packed, twin)
    try:
        for name in ("packed", "blocks"):
            await stores[name].save_repository(repo("r1"))

        async def write(path: int, chunks: list[str]) -> None:
            for name in ("packed", "blocks"):
                name_of = f"{'ab'[path % 2]}/f{path}.txt"
                if chunks:
                    batch = file_batch("r1", name_of, chunks)
                    await stores[name].replace_files("r1", [batch])
                else:
                    await stores[name].delete_files("r1", [name_of])

        for path, chunks in first:
            await write(path, chunks)
        await Packing(db, packed, PACKED).optimize()
        for step in steps:
            if step == "repack":
                await Packing(
                    db, packed, PackConfig(min_docs=1, min_df=2, rebuild_min=-1, rebuild_share=-1.0)
                ).optimize()
            elif step[0] == "delete":
                await write(step[1], [])
            else:
                await write(*step)
            for words in ("alpha beta", "gamma", "delta omega kappa alpha"):
                terms = lexical.query_terms(words)
                for limit, flt in ((2, NO_FILTER), (30, NO_FILTER), (30, ONE_DIRECTORY)):
                    want = _plain(await stores["blocks"].lexical_search(terms, flt, limit))
                    for name in ("packed", "packed-nocache"):
                        got = await stores[name].lexical_search(terms, flt, limit)
                        assert _plain(got) == want, (name, words, limit, flt)
    finally:
        await db.close()
        await drop_projects_async(pg_url, [packed, twin])
