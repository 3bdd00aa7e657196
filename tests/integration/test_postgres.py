"""Postgres specifics: migrations, concurrent startup, workspaces, model/dimension rules,
ANN segments and filtered completeness, transactional replacement, locks, error translation."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemorySourceTree
from adapters.postgres import AnnConfig, PgChunkStore, PgDatabase, PgTaskRepo, embedded, schema_name
from adapters.postgres._errors import translate
from adapters.postgres.chunk_store import _Filter, term_key
from adapters.postgres.embedded import shared_buffers_mb
from adapters.postgres.schema import GLOBAL_SQL, MIGRATIONS, SCHEMA_VERSION
from adapters.tokens import TiktokenCounter
from adapters.treesitter import TreeSitterChunker
from codebase_core import lexical
from codebase_core.errors import (
    ModelMismatch,
    RepositoryBusy,
    StoreUnavailable,
    ValidationFailed,
)
from codebase_core.models import SearchFilters, Task, utcnow
from codebase_core.ports import ChunkStore
from codebase_core.services import IndexingService
from tests.conftest import drop_projects, drop_projects_async, new_project_id
from tests.factories import file_batch, repo

NO_FILTER = SearchFilters()


@pytest.fixture
async def db(pg_url: str, tmp_path: Path) -> AsyncIterator[PgDatabase]:
    database = PgDatabase(pg_url, data_dir=tmp_path)
    yield database
    await database.close()


@pytest.fixture
def project(pg_url: str) -> Iterator[str]:
    pid = new_project_id()
    yield pid
    drop_projects(pg_url, [pid])


def _service(store: ChunkStore, files: dict[str, str], dimension: int = 64) -> IndexingService:
    tree = InMemorySourceTree({"/repo": {k: v.encode() for k, v in files.items()}})
    counter = TiktokenCounter()
    return IndexingService(
        store=store,
        source=tree,
        chunker=TreeSitterChunker(counter),
        tokens=counter,
        embedder=HashingEmbedder(dimension),
    )


FILES = {
    "app/auth.py": "import hashlib\n\n\ndef hash_password(pw):\n    return hashlib.sha256(pw).hexdigest()\n",
    "app/server.py": "def serve(port):\n    '''Start the HTTP server.'''\n    return port\n",
    "docs/guide.md": "# Guide\n\nRun the server with serve(8080).\n",
}


# --- migrations and startup --------------------------------------------------------------


async def test_migrations_are_versioned_and_idempotent(db: PgDatabase, project: str) -> None:
    ws = await db.workspace(project)
    assert ws.schema == schema_name(project)
    again = PgDatabase(db._url, data_dir=Path("/nonexistent"))
    try:
        await again.workspace(project)  # a second process-like start: nothing to apply
    finally:
        await again.close()
    async with db.connection() as conn:
        versions = await conn.fetch(f"SELECT version FROM {ws.quoted}.schema_migrations")
        recorded = await conn.fetchval(
            "SELECT schema_version FROM codebase_mcp.projects WHERE id = $1", project
        )
    assert [r["version"] for r in versions] == list(range(1, SCHEMA_VERSION + 1))
    assert recorded == SCHEMA_VERSION


async def test_upgrade_from_version_1_backfills_repository_counts(
    pg_url: str, tmp_path: Path, project: str
) -> None:
    # A workspace created by version 1 (no count columns) and holding an index: opening it
    # with the current code applies the later migrations, and the counts match the rows.
    ws_name = schema_name(project)
    quoted = f'"{ws_name}"'
    old = PgDatabase(pg_url, data_dir=tmp_path)
    try:
        async with old.connection() as conn:
            await conn.execute(GLOBAL_SQL)
            await conn.execute(f"CREATE SCHEMA {quoted}")
            await conn.execute(MIGRATIONS[0][1].format(s=quoted))
            await conn.execute(f"INSERT INTO {quoted}.schema_migrations (version) VALUES (1)")
            await conn.execute(
                "INSERT INTO codebase_mcp.projects (id, schema_name, schema_version) "
                "VALUES ($1, $2, 1)",
                project,
                ws_name,
            )
    finally:
        await old.close()
    # Data written as version 1 would have: rows only, no counts.
    db = PgDatabase(pg_url, data_dir=tmp_path)
    try:
        async with db.connection() as conn:
            await conn.execute(
                f"INSERT INTO {quoted}.repositories (id, name, path) VALUES ('r1', 'one', '/one')"
            )
            await conn.execute(
                f"INSERT INTO {quoted}.files (repo_id, path, content_hash, size, body) "
                "SELECT 'r1', 'f' || i, 'h', 1, 'x' FROM generate_series(1, 3) i"
            )
            await conn.execute(
                f"INSERT INTO {quoted}.chunks (id, repo_id, file_path, file_ext, kind, "
                "start_line, end_line, content, content_hash, token_count, doc_len, terms) "
                "SELECT 'c' || i, 'r1', 'f1', 'py', 'module', i, i, 'x', 'h', 1, 1, '{}' "
                "FROM generate_series(1, 5) i"
            )
        with pytest.raises(StoreUnavailable, match="chunk_count"):
            async with db.connection() as conn:
                await conn.fetchval(f"SELECT chunk_count FROM {quoted}.repositories")
        store = PgChunkStore(db, project)
        [r] = await store.list_repositories()  # migrates the workspace first
        assert (r.file_count, r.chunk_count) == (3, 5)
        async with db.connection() as conn:
            version = await conn.fetchval(
                "SELECT schema_version FROM codebase_mcp.projects WHERE id = $1", project
            )
        assert version == SCHEMA_VERSION
    finally:
        await db.close()


async def _postings_by_place(db: PgDatabase, quoted: str) -> list[tuple[Any, ...]]:
    """Every posting as (term, file, start line, tf, length), whatever its chunk's seq; and
    checks that each block starts at its first chunk and counts its chunks."""
    async with db.connection() as conn:
        broken = await conn.fetchval(
            f"SELECT count(*) FROM {quoted}.postings WHERE first <> chunks[1] "
            "OR n <> cardinality(chunks) OR n <> cardinality(tfs) OR n <> cardinality(doc_lens)"
        )
        rows = await conn.fetch(
            f"SELECT p.term, c.file_path, c.start_line, x.tf, x.len "
            f"FROM {quoted}.postings p "
            "CROSS JOIN LATERAL unnest(p.chunks, p.tfs, p.doc_lens) AS x(chunk, tf, len) "
            f"LEFT JOIN {quoted}.chunks c ON c.seq = x.chunk ORDER BY 1, 2, 3"
        )
    assert broken == 0
    return [tuple(r) for r in rows]


async def test_upgrade_to_postings_blocks_keeps_bm25_and_replacement(
    pg_url: str, tmp_path: Path, project: str
) -> None:
    """A workspace of version 6 (one postings row per term and chunk) is converted to blocks
    when opened: the same postings and BM25 as an index written in blocks, and replacing a file
    afterwards leaves none of its old postings behind."""
    files = _core_sources()
    written = new_project_id()
    db = PgDatabase(pg_url, data_dir=tmp_path)
    try:
        fresh = PgChunkStore(db, written)
        await _service(fresh, files).index("/repo")
        src = (await fresh.workspace()).quoted
        # The same index in a version 6 workspace, its postings one row per (term, chunk).
        ws_name = schema_name(project)
        q = f'"{ws_name}"'
        async with db.connection() as conn:
            await conn.execute(f"CREATE SCHEMA {q}")
            for version, sql in MIGRATIONS[:6]:
                await conn.execute(sql.format(s=q))
                await conn.execute(
                    f"INSERT INTO {q}.schema_migrations (version) VALUES ($1)", version
                )
            await conn.execute(
                "INSERT INTO codebase_mcp.projects (id, schema_name, schema_version) "
                "VALUES ($1, $2, 6)",
                project,
                ws_name,
            )
            for table in ("meta", "repositories", "files"):
                await conn.execute(f"INSERT INTO {q}.{table} SELECT * FROM {src}.{table}")
            await conn.execute(
                f"INSERT INTO {q}.chunks OVERRIDING SYSTEM VALUE SELECT * FROM {src}.chunks"
            )
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{q}.chunks', 'seq'), "
                f"(SELECT max(seq) FROM {q}.chunks))"
            )
            await conn.execute(
                f"INSERT INTO {q}.postings (term, chunk, tf, doc_len) "
                f"SELECT p.term, x.chunk, x.tf, x.len FROM {src}.postings p "
                "CROSS JOIN LATERAL unnest(p.chunks, p.tfs, p.doc_lens) AS x(chunk, tf, len)"
            )
            await conn.execute(
                f"UPDATE {q}.corpus_stats SET (n_docs, total_len, n_vectors, generation) = "
                f"(SELECT n_docs, total_len, n_vectors, generation FROM {src}.corpus_stats)"
            )
        upgraded = PgChunkStore(db, project)
        await upgraded.list_repositories()  # migrates the workspace first
        assert (await upgraded.workspace()).quoted == q
        expected = await _postings_by_place(db, src)
        assert len(expected) > 1000
        assert await _postings_by_place(db, q) == expected
        for query in ("parse task status", "BM25 upper bound", "Repository"):
            for flt in (NO_FILTER, SearchFilters(directory="services")):
                terms = lexical.query_terms(query)
                a, ta = await upgraded.lexical_search(terms, flt, 10)
                b, tb = await fresh.lexical_search(terms, flt, 10)
                assert ta == tb and [(h.chunk.id, h.score) for h in a] == [
                    (h.chunk.id, h.score) for h in b
                ]
        # An edit re-indexed in both: the upgraded blocks of the old chunks are deleted.
        edited = dict(files)
        edited["models.py"] = edited["models.py"].replace("class ", "class Edited", 3)
        for store in (fresh, upgraded):
            result = await _service(store, edited).index("/repo")
            assert result.files_indexed == 1
        expected = await _postings_by_place(db, src)
        assert all(r[1] is not None for r in expected)  # no posting of a deleted chunk
        assert await _postings_by_place(db, q) == expected
    finally:
        await db.close()
        await drop_projects_async(pg_url, [written])


async def test_concurrent_startup_in_one_process(pg_url: str, tmp_path: Path) -> None:
    project = new_project_id()
    dbs = [PgDatabase(pg_url, data_dir=tmp_path) for _ in range(4)]
    try:
        names = await asyncio.gather(*(d.workspace(project) for d in dbs))
        assert len({n.schema for n in names}) == 1
    finally:
        for d in dbs:
            await d.close()
        await drop_projects_async(pg_url, [project])


def test_concurrent_startup_across_processes(pg_url: str, tmp_path: Path) -> None:
    """Three processes create the extension, global schema and one project at once."""
    project = new_project_id()
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from adapters.postgres import PgDatabase, PgTaskRepo
        from codebase_core.models import Task, utcnow

        async def main() -> None:
            db = PgDatabase({pg_url!r}, data_dir=Path({str(tmp_path)!r}))
            try:
                now = utcnow()
                await PgTaskRepo(db, {project!r}).add(
                    Task(id=sys.argv[1], title="t", created_at=now, updated_at=now))
            finally:
                await db.close()

        asyncio.run(main())
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, f"task-{i}"], stderr=subprocess.PIPE)
        for i in range(3)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    try:
        assert [p.returncode for p in procs] == [0, 0, 0], errors

        async def count() -> int:
            db = PgDatabase(pg_url, data_dir=tmp_path)
            try:
                page = await PgTaskRepo(db, project).list()
                return page.total_count
            finally:
                await db.close()

        assert asyncio.run(count()) == 3
    finally:
        drop_projects(pg_url, [project])


# --- workspaces ----------------------------------------------------------------------------


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
    assert "1-64 characters" in str(err.value)


async def test_projects_are_isolated(db: PgDatabase, pg_url: str) -> None:
    a, b = new_project_id(), new_project_id()
    try:
        store_a, store_b = PgChunkStore(db, a), PgChunkStore(db, b)
        await _service(store_a, FILES).index("/repo")
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


# --- one model per project -----------------------------------------------------------------


async def test_dimension_mismatch_is_refused_with_the_fix(db: PgDatabase, project: str) -> None:
    store = PgChunkStore(db, project)
    await _service(store, FILES, dimension=64).index("/repo")
    other = InMemorySourceTree({"/other": {"x.py": b"def other():\n    return 1\n"}})
    counter = TiktokenCounter()
    service = IndexingService(
        store=store,
        source=other,
        chunker=TreeSitterChunker(counter),
        tokens=counter,
        embedder=HashingEmbedder(32),
    )
    with pytest.raises(ModelMismatch) as err:
        await service.index("/other")
    assert "force_reindex" in str(err.value) and "hash-64" in str(err.value)
    with pytest.raises(ModelMismatch):
        await store.vector_search([0.1] * 32, NO_FILTER, 5)
    # Nothing of the refused run was written.
    assert [r.path for r in await store.list_repositories()] == ["/repo"]


async def test_forced_reindex_switches_the_only_repository_to_a_new_dimension(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project)
    await _service(store, FILES, dimension=64).index("/repo")
    result = await _service(store, FILES, dimension=32).index("/repo", force=True)
    assert result.chunks_embedded == result.chunks_created > 0
    hits, total = await store.vector_search(
        await HashingEmbedder(32).embed_query("hash password"), NO_FILTER, 3
    )
    assert hits and total == result.chunks_created
    assert (await store.get_repository(result.repository_id)).embedding_model == "hash-32"


# --- ANN segments, filtered completeness ---------------------------------------------------

SMALL_ANN = AnnConfig(min_rows=100, segment_rows=150, tail_rows=40, exact_rows=30, max_segments=2)


def _corpus(n_files: int) -> dict[str, list[str]]:
    return {
        f"pkg{i % 7}/mod{i}.py": [
            f"def f{i}_{j}(x):\n    return x * {i} + {j}  # item {i} {j}" for j in range(5)
        ]
        for i in range(n_files)
    }


async def _load(store: ChunkStore, n_files: int, dim: int = 32) -> HashingEmbedder:
    emb = HashingEmbedder(dim)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": emb.model, "embedding_dimension": dim})
    )
    batches = []
    for path, pieces in _corpus(n_files).items():
        vecs = (await emb.embed_documents(pieces)).vectors
        batches.append(file_batch("r1", path, pieces, vecs))
    for i in range(0, len(batches), 20):
        await store.replace_files("r1", batches[i : i + 20])
    return emb


async def test_segments_are_built_merged_and_searched_completely(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project, ann=SMALL_ANN)
    reference = InMemoryChunkStore()
    emb = await _load(store, 120)  # 600 chunks
    await _load(reference, 120)
    await store.optimize()
    ws = await store.workspace()
    async with db.connection() as conn:
        segments = await conn.fetch(f"SELECT lo, hi FROM {ws.quoted}.ann_segments ORDER BY lo")
        indexes = await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'chunks' "
            "AND indexname LIKE 'ann%'",
            ws.schema,
        )
    assert 1 <= len(segments) <= SMALL_ANN.max_segments
    assert len(indexes) == len(segments)
    query = await emb.embed_query("return x item 7")
    # Unfiltered: HNSW over the segments, same best hit as the exact reference.
    hits, total = await store.vector_search(query, NO_FILTER, 10)
    ref, ref_total = await reference.vector_search(query, NO_FILTER, 10)
    assert total == ref_total == 600 and len(hits) == 10
    assert hits[0].chunk.id == ref[0].chunk.id
    # Selective filter (one directory, a file type): still `limit` hits, exactly ranked.
    for flt in (SearchFilters(directory="pkg3"), SearchFilters(directory="pkg3", file_type="py")):
        hits, total = await store.vector_search(query, flt, 50)
        ref, ref_total = await reference.vector_search(query, flt, 50)
        assert total == ref_total and len(hits) == min(50, ref_total)
        # Exact: the same scores in the same order (float32 vs pgvector rounding aside).
        assert [h.score for h in hits] == pytest.approx([h.score for h in ref], abs=1e-5)
        assert all(h.chunk.file_path.startswith("pkg3/") for h in hits)
    # The same with HNSW walking every segment that has matches (no per-segment exact scans):
    # the candidate list widened by each segment's share of matches still fills the limit.
    walk = PgChunkStore(
        db, project, ann=dataclasses.replace(SMALL_ANN, exact_segment_rows=0, ef_search_max=1000)
    )
    for flt in (SearchFilters(directory="pkg3"), SearchFilters(file_type="py")):
        hits, total = await walk.vector_search(query, flt, 50)
        ref, ref_total = await reference.vector_search(query, flt, 50)
        assert total == ref_total and len(hits) == min(50, ref_total)
        assert hits[0].chunk.id == ref[0].chunk.id


async def test_a_tail_filled_during_a_build_gets_the_next_build(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes that pass the segment threshold while a background build runs start the next
    build once the tail is full again, counted from the tail that build saw; the trigger is
    not lost (which left a tail of two segments to one long build after the load)."""
    ann = AnnConfig(min_rows=0, segment_rows=100, tail_rows=40, max_segments=8)
    store = PgChunkStore(db, project, ann=ann)
    emb = HashingEmbedder(32)
    await store.save_repository(
        repo("r1").model_copy(update={"embedding_model": emb.model, "embedding_dimension": 32})
    )
    files = [
        file_batch("r1", path, pieces, (await emb.embed_documents(pieces)).vectors)
        for path, pieces in _corpus(60).items()  # 5 chunks a file
    ]
    counting, building = asyncio.Event(), asyncio.Event()
    at_build = asyncio.Event()
    drop_stale, create_segment = store._drop_stale, store._create_segment

    async def gated_drop(*args: Any) -> None:
        await counting.wait()
        await drop_stale(*args)

    async def gated_create(*args: Any) -> None:
        at_build.set()
        await building.wait()
        await create_segment(*args)

    monkeypatch.setattr(store, "_drop_stale", gated_drop)
    monkeypatch.setattr(store, "_create_segment", gated_create)

    async def settled() -> list[tuple[int, int]]:
        while store._builds:
            await asyncio.gather(*list(store._builds))
        ws = await store.workspace()
        async with db.connection() as conn:
            rows = await conn.fetch(f"SELECT lo, hi FROM {ws.quoted}.ann_segments ORDER BY lo")
        return [(r["lo"], r["hi"]) for r in rows]

    await store.replace_files("r1", files[0:20])  # 100 rows: a build starts, held before counting
    await store.replace_files("r1", files[20:32])  # 60 more
    counting.set()
    await at_build.wait()  # it counted a tail of 160
    await store.replace_files("r1", files[32:42])  # 50 more while it builds: 110 since it began
    building.set()
    assert await settled() == [(0, 160)]
    await store.replace_files("r1", files[42:54])  # 60 more: a tail of 110
    assert await settled() == [(0, 160), (160, 270)]


async def test_filtered_matches_are_remembered_until_the_chunks_change(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project, ann=SMALL_ANN)
    emb = await _load(store, 120)
    await store.optimize()
    flt = SearchFilters(directory="pkg3")
    query = await emb.embed_query("return x item 10")
    first, total = await store.vector_search(query, flt, 10)
    again, total_again = await store.vector_search(query, flt, 10)
    assert [h.chunk.id for h in again] == [h.chunk.id for h in first]
    assert total_again == total == 85
    assert len(store._matches_cache) == 1  # the second search reused the first one's pass
    # Replace one file of the directory with as many chunks: new rows past the last segment,
    # and the same counts. A cache keyed on the counts alone would skip them.
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    pieces = [f"def {w}_{w}(x):\n    return {w}_table[x]  # {w} lookup" for w in words]
    vectors = (await emb.embed_documents(pieces)).vectors
    await store.replace_files("r1", [file_batch("r1", "pkg3/mod10.py", pieces, vectors)])
    target = await emb.embed_query(pieces[2])
    hits, total = await store.vector_search(target, flt, 10)
    assert total == 85
    assert hits[0].chunk.content == pieces[2]
    assert not any(h.chunk.content.startswith("def f10_") for h in hits)  # the old rows


@pytest.mark.parametrize(("pool_size", "busy"), [(2, 0), (8, 0), (3, 1)])
async def test_a_large_load_ends_vacuumed_and_analysed_with_any_pool(
    pg_url: str, project: str, tmp_path: Path, pool_size: int, busy: int
) -> None:
    """Chunks and postings are vacuumed side by side when the pool has a connection to spare;
    with a pool of two (one held by the indexing lock, one by the build) or every other
    connection busy (here, held by someone else all along) they take turns, without waiting
    for the pool's timeout."""
    db = PgDatabase(pg_url, data_dir=tmp_path, pool_size=pool_size, connect_timeout_s=30)
    try:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(busy):
                await held.enter_async_context(db.connection())
            store = PgChunkStore(db, project, ann=SMALL_ANN)
            files = {path: "\n\n\n".join(pieces) for path, pieces in _corpus(30).items()}
            result = await asyncio.wait_for(_service(store, files).index("/repo"), 20)
        assert result.chunks_created >= SMALL_ANN.tail_rows
        ws = await store.workspace()
        async with db.connection() as conn:
            rows = await conn.fetch(
                "SELECT relname, last_vacuum, last_analyze FROM pg_stat_user_tables "
                "WHERE schemaname = $1 AND relname IN ('chunks', 'postings')",
                ws.schema,
            )
    finally:
        await db.close()
    assert sorted(r["relname"] for r in rows) == ["chunks", "postings"]
    assert all(r["last_vacuum"] is not None and r["last_analyze"] is not None for r in rows)


def _core_sources() -> dict[str, str]:
    src = Path(__file__).resolve().parents[2] / "src" / "codebase_core"
    return {p.relative_to(src).as_posix(): p.read_text() for p in src.rglob("*.py")}


async def test_lexical_top10_matches_memory_on_a_real_corpus(db: PgDatabase, project: str) -> None:
    files = _core_sources()
    pg, mem = PgChunkStore(db, project), InMemoryChunkStore()
    r1 = await _service(pg, files).index("/repo")
    r2 = await _service(mem, files).index("/repo")
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
    await _service(store, _core_sources()).index("/repo")
    ws = await store.workspace()
    keys = [term_key(t) for t in lexical.query_terms("parse task status")]
    flt = _Filter(SearchFilters(directory="services"), 3)
    sql = PgChunkStore._lexical_sql(ws.quoted, flt, ties=False)
    async with db.connection() as conn:
        never = await conn.fetchval(
            "SELECT reltuples < 0 FROM pg_class WHERE oid = $1::regclass",
            f"{ws.quoted}.corpus_stats",
        )
        plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", keys, 10, *flt.params)

    def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    w = next(n for n in nodes(json.loads(plan)[0]["Plan"]) if n.get("Subplan Name") == "CTE w")
    assert never  # the case this guards: autovacuum has not come by yet
    assert w["Plan Rows"] <= len(keys)


# --- transactions, locks, faults -----------------------------------------------------------


async def test_killed_connection_mid_write_keeps_the_old_chunks(
    db: PgDatabase, project: str, pg_url: str
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    await store.replace_files("r1", [file_batch("r1", "a.py", ["def old():\n    return 1"])])
    ws = await store.workspace()
    blocker, watcher = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        # Hold the statistics row so the replacement blocks at the end of its transaction,
        # after it has deleted the old chunks and copied the new ones; then kill it.
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(f"SELECT * FROM {ws.quoted}.corpus_stats FOR UPDATE")
        write = asyncio.create_task(
            store.replace_files(
                "r1", [file_batch("r1", "a.py", ["def new_version():\n    return two + three"])]
            )
        )
        for _ in range(100):
            pid = await watcher.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%corpus_stats%'"
            )
            if pid:
                break
            await asyncio.sleep(0.05)
        assert pid, "the replacement never reached the statistics update"
        await blocker.execute("SELECT pg_terminate_backend($1)", pid)
        with pytest.raises(StoreUnavailable) as err:
            await write
        assert "lost" in str(err.value) or "terminat" in str(err.value)
        await tx.rollback()
    finally:
        await blocker.close()
        await watcher.close()
    chunks = await store.chunks("r1")
    assert [c.content for c in chunks] == ["def old():\n    return 1"]
    assert await store.file_texts("r1", ["a.py"]) == {"a.py": "def old():\n    return 1"}


async def test_writers_of_other_files_overlap_and_of_one_file_take_turns(
    db: PgDatabase, project: str, pg_url: str
) -> None:
    store = PgChunkStore(db, project)
    await store.save_repository(repo("r1"))
    ws = await store.workspace()
    blocker, watcher = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        # Hold the repository's row against updates: every write stops at its count update,
        # the last step of its transaction, after its deletes and COPYs.
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute(f"SELECT 1 FROM {ws.quoted}.repositories FOR NO KEY UPDATE")
        writes = [
            asyncio.create_task(
                store.replace_files("r1", [file_batch("r1", f"{name}.py", [f"def {name}(): ..."])])
            )
            for name in ("a", "b")
        ]
        waiting = 0
        for _ in range(100):
            waiting = await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%SET file_count%'"
            )
            if waiting == 2:
                break
            await asyncio.sleep(0.05)
        assert waiting == 2, "writes of two different files did not run side by side"
        await tx.rollback()
        await asyncio.wait_for(asyncio.gather(*writes), 10)
    finally:
        await blocker.close()
        await watcher.close()
    # Four writers of one file at once: they take turns, and one version is left.
    versions = [[f"def v{i}(): ...", f"def w{i}(): ..."] for i in range(4)]
    await asyncio.gather(
        *(store.replace_files("r1", [file_batch("r1", "a.py", v)]) for v in versions)
    )
    chunks = [c.content for c in await store.chunks("r1") if c.file_path == "a.py"]
    assert chunks in versions
    (stored,) = await store.list_repositories()
    assert (stored.file_count, stored.chunk_count) == (2, 3)
    n_docs = await _fetch_int(pg_url, f"SELECT n_docs FROM {ws.quoted}.corpus_stats")
    assert n_docs == 3


async def _fetch_int(pg_url: str, sql: str) -> int:
    conn = await asyncpg.connect(pg_url)
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


async def test_indexing_lock_serialises_one_repository(pg_url: str, tmp_path: Path) -> None:
    project = new_project_id()
    db1, db2 = PgDatabase(pg_url, data_dir=tmp_path), PgDatabase(pg_url, data_dir=tmp_path)
    try:
        s1, s2 = PgChunkStore(db1, project), PgChunkStore(db2, project)
        async with s1.indexing_lock("r1", wait=False):
            with pytest.raises(RepositoryBusy) as err:
                async with s2.indexing_lock("r1", wait=False):
                    pass
            assert err.value.code == "REPOSITORY_BUSY"
            async with s2.indexing_lock("other", wait=False):
                pass  # other repositories are not blocked
            waiter = asyncio.create_task(_hold(s2, "r1"))
            await asyncio.sleep(0.3)
            assert not waiter.done()
        await asyncio.wait_for(waiter, 10)
    finally:
        await db1.close()
        await db2.close()
        await drop_projects_async(pg_url, [project])


async def _hold(store: PgChunkStore, repo_id: str) -> None:
    async with store.indexing_lock(repo_id, wait=True):
        pass


async def test_service_waits_for_another_indexer(pg_url: str, tmp_path: Path) -> None:
    from codebase_core.models import repository_id_for

    project = new_project_id()
    db1, db2 = PgDatabase(pg_url, data_dir=tmp_path), PgDatabase(pg_url, data_dir=tmp_path)
    try:
        s1, s2 = PgChunkStore(db1, project), PgChunkStore(db2, project)
        events: list[str] = []
        async with s1.indexing_lock(repository_id_for("/repo"), wait=False):
            with pytest.raises(RepositoryBusy):
                await _service(s2, FILES).index("/repo", wait=False)
            run = asyncio.create_task(
                _service(s2, FILES).index("/repo", progress=lambda p, d, t: events.append(p))
            )
            await asyncio.sleep(0.3)
            assert events == ["waiting"] and not run.done()
        result = await asyncio.wait_for(run, 30)
        assert result.files_indexed == 3 and events[-1] == "done"
    finally:
        await db1.close()
        await db2.close()
        await drop_projects_async(pg_url, [project])


async def test_connection_refused_names_the_url(tmp_path: Path) -> None:
    db = PgDatabase("postgresql://u:secret@127.0.0.1:1/x", data_dir=tmp_path, connect_timeout_s=3)
    with pytest.raises(StoreUnavailable) as err:
        await db.workspace("default")
    msg = str(err.value)
    assert err.value.code == "DATABASE_ERROR" and "refused" in msg
    assert "127.0.0.1:1" in msg and "secret" not in msg and "***" in msg


async def test_pool_exhaustion_and_statement_timeout_are_translated(
    pg_url: str, tmp_path: Path
) -> None:
    db = PgDatabase(
        pg_url, data_dir=tmp_path, pool_size=2, connect_timeout_s=0.5, statement_timeout_s=0.2
    )
    try:
        async with db.connection(), db.connection():
            with pytest.raises(StoreUnavailable) as err:
                async with db.connection():
                    pass
            assert "pool of 2" in str(err.value) and "CODEBASE_MCP_POOL_SIZE" in str(err.value)
        with pytest.raises(StoreUnavailable) as err:
            async with db.connection() as conn:
                await conn.execute("SELECT pg_sleep(2)")
        assert "statement timeout" in str(err.value)
    finally:
        await db.close()


async def test_lost_connection_is_translated(db: PgDatabase, pg_url: str) -> None:
    killer = await asyncpg.connect(pg_url)
    try:
        with pytest.raises(StoreUnavailable) as err:
            async with db.connection() as conn:
                pid = await conn.fetchval("SELECT pg_backend_pid()")
                await killer.execute("SELECT pg_terminate_backend($1)", pid)
                await asyncio.sleep(0.1)
                await conn.fetchval("SELECT 1")
        assert "lost" in str(err.value) or "terminat" in str(err.value)
    finally:
        await killer.close()
    async with db.connection() as conn:  # the pool recovers
        assert await conn.fetchval("SELECT 1") == 1


def test_authentication_failure_message() -> None:
    exc = asyncpg.InvalidPasswordError("password authentication failed for user bob")
    err = translate(exc, "postgresql://bob:pw@db:5432/x", timeout_s=1, pool_size=2)
    assert isinstance(err, StoreUnavailable)
    assert "authentication failed" in str(err) and "db:5432" in str(err) and "pw@" not in str(err)


# --- embedded default ----------------------------------------------------------------------


def test_embedded_server_persists_across_processes(tmp_path: Path) -> None:
    """No DATABASE_URL: index in one process, search in another (the quick start)."""
    repo_dir = tmp_path / "repo"
    (repo_dir / "pkg").mkdir(parents=True)
    (repo_dir / "pkg" / "auth.py").write_text("def verify_token(token):\n    return token\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CODEBASE_MCP_DATABASE_URL")
    }
    env["CODEBASE_MCP_DATA_DIR"] = str(tmp_path / "data")
    cli = [sys.executable, "-m", "entrypoints.cli.main"]
    first = subprocess.run(
        [*cli, "index", str(repo_dir)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [*cli, "search", "verify token", "--json"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert "pkg/auth.py" in second.stdout
    assert (tmp_path / "data" / "postgres" / "PG_VERSION").exists()


async def _shared_buffers_mb(uri: str) -> int:
    conn = await asyncpg.connect(uri)
    try:
        return int(
            await conn.fetchval("SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576")
        )
    finally:
        await conn.close()


async def test_embedded_server_runs_with_its_buffer_pool_from_the_first_start(
    tmp_path: Path,
) -> None:
    """A new cluster restarts once with the buffer pool set; a later start keeps it, and a
    value set by hand is left alone."""
    data = tmp_path / "pg"
    want = shared_buffers_mb()
    assert 128 <= want <= 1024
    try:
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == want
        conn = await asyncpg.connect(uri)
        try:
            await conn.execute("ALTER SYSTEM SET shared_buffers = '200MB'")
        finally:
            await conn.close()
        await asyncio.to_thread(embedded.stop_embedded, data)
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 200
    finally:
        await asyncio.to_thread(embedded.stop_embedded, data)


async def test_embedded_server_that_cannot_take_its_buffer_pool_keeps_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A buffer pool the machine cannot map: the new cluster starts with initdb's default
    instead, and does not try again."""
    monkeypatch.setattr(embedded, "shared_buffers_mb", lambda: 4 * 1024 * 1024)  # 4 TiB
    data = tmp_path / "pg"
    try:
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 128
        await asyncio.to_thread(embedded.stop_embedded, data)
        uri = await asyncio.to_thread(embedded._start, data)
        assert await _shared_buffers_mb(uri) == 128
    finally:
        await asyncio.to_thread(embedded.stop_embedded, data)
