"""Postgres migrations: versioned and idempotent, and upgrades of workspaces written by
earlier versions (repository counts, postings blocks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.postgres import PgChunkStore, PgDatabase, schema_name
from codebase_mcp_search.adapters.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from codebase_mcp_search.adapters.postgres.shared_tables import GLOBAL_SQL
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import (
    StoreUnavailable,
)
from codebase_mcp_search.core.models import IndexRequest, SearchFilters
from tests.conftest import drop_projects_async, new_project_id
from tests.integration.pg_helpers import NO_FILTER, core_sources, indexing_service


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
            await conn.execute(MIGRATIONS[0][1].at(ws_name))
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
        # The driver's own words (the missing column) are for the operator's log only.
        with pytest.raises(StoreUnavailable) as missing:
            async with db.connection() as conn:
                await conn.fetchval(f"SELECT chunk_count FROM {quoted}.repositories")
        assert "chunk_count" in missing.value.detailed and "chunk_count" not in str(missing.value)
        store = PgChunkStore(db, project)
        [r] = await store.list_repositories()  # migrates the workspace first
        assert (r.file_count, r.chunk_count) == (3, 5)
        # Its terms were derived by the first analyser: the next index run derives them again.
        assert r.analyser_version == 1
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
    files = core_sources()
    written = new_project_id()
    db = PgDatabase(pg_url, data_dir=tmp_path)
    try:
        fresh = PgChunkStore(db, written)
        await indexing_service(fresh, files).index(IndexRequest(root="/repo"))
        src = (await fresh.workspace()).quoted
        # The same index in a version 6 workspace, its postings one row per (term, chunk).
        ws_name = schema_name(project)
        q = f'"{ws_name}"'
        async with db.connection() as conn:
            await conn.execute(f"CREATE SCHEMA {q}")
            for version, statement in MIGRATIONS[:6]:
                await conn.execute(statement.at(ws_name))
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
                # The columns the old version has (later versions added some).
                names = await conn.fetch(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
                    ws_name,
                    table,
                )
                cols = ", ".join(f'"{r["column_name"]}"' for r in names)
                await conn.execute(
                    f"INSERT INTO {q}.{table} ({cols}) SELECT {cols} FROM {src}.{table}"
                )
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
        # An edit re-indexed in both: the upgraded blocks of the old chunks are deleted. The
        # upgraded index was written by the first analyser (its repository row predates the
        # version), so its run derives every file's terms again.
        edited = dict(files)
        edited["errors.py"] = edited["errors.py"].replace("class ", "class Edited", 3)
        for store, derived in ((fresh, 1), (upgraded, len(files))):
            result = await indexing_service(store, edited).index(IndexRequest(root="/repo"))
            assert result.files_indexed == derived
        expected = await _postings_by_place(db, src)
        assert all(r[1] is not None for r in expected)  # no posting of a deleted chunk
        assert await _postings_by_place(db, q) == expected
    finally:
        await db.close()
        await drop_projects_async(pg_url, [written])


async def test_chunks_written_before_contexts_were_kept_get_them_from_the_file(
    db: PgDatabase, project: str
) -> None:
    """Chunks of a workspace indexed before version 9 have no stored context: a search cuts
    it from the file bodies, the same lines; chunks written since have theirs, and a file's
    replacement leaves no context of its old chunks behind."""
    files = core_sources()
    store = PgChunkStore(db, project)
    result = await indexing_service(store, files).index(IndexRequest(root="/repo"))
    chunks = await store.chunks(result.repository_id)
    assert len(chunks) > 100
    stored = await store.hit_contexts(chunks)
    assert set(stored) == {c.id for c in chunks}
    assert any(before and after for before, after in stored.values())
    q = (await store.workspace()).quoted
    async with db.connection() as conn:
        await conn.execute(f"DELETE FROM {q}.chunk_context")
    assert await store.hit_contexts(chunks) == stored
    edited = dict(files)
    edited["errors.py"] = edited["errors.py"].replace("class ", "class Edited", 3)
    await indexing_service(store, edited).index(IndexRequest(root="/repo"))
    async with db.connection() as conn:
        orphans = await conn.fetchval(
            f"SELECT count(*) FROM {q}.chunk_context x "
            f"WHERE NOT EXISTS (SELECT 1 FROM {q}.chunks c WHERE c.id = x.chunk_id)"
        )
        kept = await conn.fetchval(f"SELECT count(*) FROM {q}.chunk_context")
    now = await store.chunks(result.repository_id)
    assert orphans == 0
    assert kept == sum(1 for c in now if c.file_path == "errors.py")
    assert await store.hit_contexts(now) == {
        c.id: stored[c.id] for c in now if c.file_path != "errors.py"
    } | await store.hit_contexts([c for c in now if c.file_path == "errors.py"])
