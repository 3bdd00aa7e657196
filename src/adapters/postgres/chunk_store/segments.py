"""ANN segment maintenance: partial HNSW indexes built over the tail of chunk insertion
order (in the background during a load, and at its end), merged while there are too many,
stale ones dropped; and the vacuum after a large load. ``Segments`` owns the counters that
decide when to build and when to vacuum."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.ann import AnnConfig
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.database import (
    TRY_LOCK,
    UNLOCK,
    PgDatabase,
    lock_key,
)
from codebase_mcp_search.adapters.postgres.sql import Statement, quote_ident

SEGMENT_NAMES = Statement("SELECT index_name FROM {s}.ann_segments")
SEGMENTS = Statement("SELECT index_name, lo, hi FROM {s}.ann_segments ORDER BY lo")
DROP_INDEX = Statement("DROP INDEX IF EXISTS {s}.{index}")
DROP_INDEX_CONCURRENTLY = Statement("DROP INDEX CONCURRENTLY IF EXISTS {s}.{index}")
FORGET_ALL_SEGMENTS = Statement("DELETE FROM {s}.ann_segments")
FORGET_SEGMENTS = Statement("DELETE FROM {s}.ann_segments WHERE index_name = ANY($1::text[])")
RESET_ALL: Final = "RESET ALL"
# The build's session: its memory ($1, as '512MB'), parallel workers ($2), no statement timeout.
BUILD_SETTINGS: Final = """
    SELECT set_config('maintenance_work_mem', $1, false),
           set_config('max_parallel_maintenance_workers', $2, false),
           set_config('statement_timeout', '0', false)
"""
INDEXED_UP_TO = Statement("SELECT coalesce(max(hi), 0) FROM {s}.ann_segments")
# The vectors past seq $1 that a segment may cover: up to the first chunk still waiting for
# its vector (of a repository with a model), so a vector stored later on a row of a built
# segment never costs an HNSW insert (the semantic layer fills the seq order from its start).
# The first waiting chunk is an uncorrelated subquery, so an InitPlan: computed once whatever
# the plan (as a joined CTE, statistics taken before the vectors arrived once put it on the
# inner side of a nested loop, run again for every row: minutes instead of milliseconds).
TAIL = Statement(
    """SELECT count(*) AS n, max(c.seq) AS top FROM {s}.chunks c
       WHERE c.seq > $1 AND c.embedding IS NOT NULL
         AND c.seq < coalesce(
             (SELECT min(w.seq) FROM {s}.chunks w
              JOIN {s}.repositories r ON r.id = w.repo_id
              WHERE w.seq > $1 AND w.embedding IS NULL AND r.embedding_model IS NOT NULL),
             9223372036854775807)"""
)
VECTORS = Statement("SELECT n_vectors FROM {s}.corpus_stats")
# DDL takes no parameter: the index name (quoted), its HNSW parameters and the bounds of its
# seq range (ints) are put in the text.
CREATE_SEGMENT = Statement(
    """CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {s}.chunks
       USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})
       WHERE seq > {lo} AND seq <= {hi}"""
)
RECORD_SEGMENT = Statement(
    """INSERT INTO {s}.ann_segments (index_name, lo, hi, m, ef_construction)
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"""
)
# ANN indexes of the chunks of schema $1 (recorded or not).
ANN_INDEXES: Final = """
    SELECT i.relname FROM pg_index x
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = $1 AND t.relname = 'chunks' AND i.relname LIKE 'ann\\_%'
"""
NO_STATEMENT_TIMEOUT: Final = "SET statement_timeout = 0"
VACUUM = {
    "chunks": Statement("VACUUM (ANALYZE) {s}.chunks"),
    "postings": Statement("VACUUM (ANALYZE) {s}.postings"),
}


async def drop_segments(db: ProjectSession) -> None:
    """Drop every ANN index of the project, in the caller's transaction."""
    for seg in await db.conn.fetch(db.sql(SEGMENT_NAMES)):
        await db.conn.execute(db.sql(DROP_INDEX, index=quote_ident(seg["index_name"])))
    await db.conn.execute(db.sql(FORGET_ALL_SEGMENTS))


class Segments:
    """The ANN segments of one project, and the writes counted towards the next build."""

    def __init__(self, database: PgDatabase, project_id: str, ann: AnnConfig) -> None:
        self._db = database
        self._project_id = project_id
        self._ann = ann
        self._builds: set[asyncio.Task[None]] = set()
        self._written = 0
        self._since_analyze = 0

    def wrote(self, n_docs: int, *, vectors: bool) -> None:
        """Count a committed write of ``n_docs`` chunks (``vectors``: with vectors), starting
        a background build once the tail may hold a segment."""
        self._since_analyze += n_docs
        if vectors:
            # A cheap local trigger; the exact tail size is checked by the build itself.
            self._written += n_docs
            # Counted from the start of the last build: while one runs, the next write past
            # the threshold tries again (a reset here would let the tail grow to two segments
            # and leave a long single-process build running after the load).
            if self._written >= self._ann.segment_rows and self._maybe_start():
                self._written = 0

    def _maybe_start(self) -> bool:
        """Start a background build unless one runs; whether one was started."""
        if any(not t.done() for t in self._builds):
            return False
        task = self._db.spawn(self._project_id, self._build(final=False))
        self._builds.add(task)
        task.add_done_callback(self._builds.discard)
        return True

    async def optimize(self) -> None:
        """Wait for background builds, then index the tail and merge small segments; after a
        large load, vacuum and analyse chunks and postings (see ``_vacuum``)."""
        loaded = self._since_analyze >= self._ann.tail_rows
        # Postings take no part in the ANN builds: with a connection to spare, they are vacuumed
        # while the last builds run (with a pool of two, the indexing lock and a build hold
        # both), and chunks after them (see _build).
        beside = None
        if loaded and self._db.pool_size >= 3:
            beside = asyncio.get_running_loop().create_task(self._vacuum_on_spare("postings"))
        try:
            while self._builds:
                await asyncio.gather(*list(self._builds), return_exceptions=True)
            await self._build(final=True, vacuum=loaded, beside=beside)
        finally:
            if beside is not None:
                await _settle(beside)

    async def _build(
        self, *, final: bool, vacuum: bool = False, beside: asyncio.Task[bool] | None = None
    ) -> None:
        """Build segments while the tail is large enough (``final``: the run's tail too, and
        merge small segments), under the project's build lock; with ``vacuum``, then vacuum
        chunks (a VACUUM waits for an index build, so it is done here, never queued behind
        another process's) and postings unless ``beside`` did."""
        ws = await self._db.workspace(self._project_id)
        ann = self._ann
        async with self._db.connection(session_state=True) as conn:
            db = ProjectSession.of(conn, ws)
            # One builder per project at a time, across processes.
            key = lock_key(ws.schema, "ann")
            if not await conn.fetchval(TRY_LOCK, key):
                return
            try:
                workers = ann.final_build_workers if final else 0
                await conn.execute(
                    BUILD_SETTINGS, f"{int(ann.build_memory_mb)}MB", str(int(workers))
                )
                await self._drop_stale(db)
                while True:
                    hi = await conn.fetchval(db.sql(INDEXED_UP_TO))
                    tail = await conn.fetchrow(db.sql(TAIL), hi)
                    total = await conn.fetchval(db.sql(VECTORS))
                    threshold = ann.tail_rows if final else ann.segment_rows
                    if total < ann.min_rows or tail["n"] < threshold:
                        # The writes' trigger counts on from the tail seen here.
                        self._written = int(tail["n"])
                        break
                    await self._create_segment(db, hi, tail["top"])
                if final:
                    await self._merge(db)
                if vacuum:
                    await _vacuum(db, "chunks")
                    if beside is None or not await beside:
                        await _vacuum(db, "postings")
                    self._since_analyze = 0
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute(UNLOCK, key)
                    await conn.execute(RESET_ALL)

    async def _vacuum_on_spare(self, table: str) -> bool:
        """``_vacuum`` on a connection of its own if one is free; whether it ran."""
        ws = await self._db.workspace(self._project_id)
        async with self._db.spare_connection(session_state=True) as other:
            if other is None:
                return False
            await _vacuum(ProjectSession.of(other, ws), table)
            return True

    async def _create_segment(self, db: ProjectSession, lo: int, hi: int) -> None:
        name = f"ann_{lo}_{hi}"
        index = quote_ident(name)
        ann = self._ann
        try:
            await db.conn.execute(
                db.sql(
                    CREATE_SEGMENT,
                    index=index,
                    m=int(ann.m),
                    ef=int(ann.ef_construction),
                    lo=int(lo),
                    hi=int(hi),
                )
            )
        except BaseException:
            with contextlib.suppress(*DRIVER_ERRORS):
                await db.conn.execute(db.sql(DROP_INDEX, index=index))
            raise
        await db.conn.execute(db.sql(RECORD_SEGMENT), name, lo, hi, ann.m, ann.ef_construction)

    async def _drop_stale(self, db: ProjectSession) -> None:
        """Drop ANN indexes a killed build left behind (present but not recorded)."""
        rows = await db.conn.fetch(ANN_INDEXES, db.schema)
        known = {r[0] for r in await db.conn.fetch(db.sql(SEGMENT_NAMES))}
        for r in rows:
            if r["relname"] not in known:
                await db.conn.execute(db.sql(DROP_INDEX, index=quote_ident(r["relname"])))

    async def _merge(self, db: ProjectSession) -> None:
        """Merge the two adjacent segments smallest together while there are too many."""
        while True:
            segs = await db.conn.fetch(db.sql(SEGMENTS))
            if len(segs) <= self._ann.max_segments:
                return
            sizes = [int(g["hi"]) - int(g["lo"]) for g in segs]
            i = min(range(len(segs) - 1), key=lambda j: sizes[j] + sizes[j + 1])
            a, b = segs[i], segs[i + 1]
            await self._create_segment(db, int(a["lo"]), int(b["hi"]))
            async with db.conn.transaction():
                await db.conn.execute(db.sql(FORGET_SEGMENTS), [a["index_name"], b["index_name"]])
            for old in (a, b):
                index = quote_ident(old["index_name"])
                await db.conn.execute(db.sql(DROP_INDEX_CONCURRENTLY, index=index))


async def _vacuum(db: ProjectSession, table: str) -> None:
    """VACUUM (ANALYZE) one of the project's tables, after a large load: planner statistics
    (a sample), and the visibility map, without which the index-only scans that count filter
    matches and read postings visit the table for every row until autovacuum comes by. Its
    connection must be taken with ``session_state``: the pool then resets the session when
    the connection goes back."""
    await db.conn.execute(NO_STATEMENT_TIMEOUT)
    await db.conn.execute(db.sql(VACUUM[table]))


async def _settle(task: asyncio.Task[Any]) -> None:
    """Cancel side work if still running and wait for it, its failure dropped: when it ran to
    the end the caller awaited it, else the caller is failing and that is what to report (or
    another process held the build lock). A cancel of the caller itself still raises."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()
