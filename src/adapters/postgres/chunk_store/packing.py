"""The packed postings of a large project's common terms (``adapters.postgres.packed``), built
by ``optimize`` and corrected at search time by the writes logged since (``terms``).

A term in most chunks of a large project has a postings block in most of its files: an
unfiltered search reading it from the blocks fetches ~100,000 heap tuples and aggregates their
arrays (most of a search's time at a million chunks). ``Packing.optimize`` writes, for each term
with at least ``min_df`` postings in a project of at least ``min_docs`` chunks, one row holding
all of its postings packed, from one snapshot (a repeatable-read transaction) of the blocks.

Writes go on meanwhile and after. Each write logs, in its own transaction, the seq range of
the chunks it inserts (``packed_inserts``) and the seqs of those it deletes (``packed_gone``);
the build deletes the log rows its snapshot sees, so what is left is exactly what the build did
not see: a search takes a packed term, less its chunks deleted since, plus its blocks among
the ranges inserted since (chunk rows never change: that is the term now). A write by a
version of this code that logs nothing moves ``corpus_stats.generation - logged`` and voids
the build until the next one. The build is made again once the writes since it touch more
than ``rebuild_share`` of its chunks (and at least ``rebuild_min``), and dropped, logs
included, when the project falls under ``min_docs``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Final

import asyncpg

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.chunk_store.terms_read import PACKED_MAX_WRITES
from codebase_mcp_search.adapters.postgres.database import TRY_LOCK, UNLOCK, PgDatabase, lock_key
from codebase_mcp_search.adapters.postgres.sql import Statement

PACK_MIN_DOCS: Final = 100_000
PACK_MIN_DF: Final = 2_048
PACK_REBUILD_SHARE: Final = 0.05
PACK_REBUILD_MIN: Final = 20_000
# Postings read per statement of a build (about 60 bytes each in flight, read and decoded:
# 2 million took 1 GB of the indexing process at a million chunks, 500,000 about 290 MB).
PACK_READ_POSTINGS: Final = 500_000

STATE = Statement(
    """
    SELECT st.n_docs, st.generation - st.logged AS unlogged,
           pb.unlogged AS built_unlogged, pb.n_docs AS built_docs,
           (SELECT count(*) FROM {s}.packed_gone) AS gone,
           (SELECT coalesce(sum(n), 0) FROM {s}.packed_inserts) AS inserted,
           (SELECT count(*) FROM {s}.packed_inserts) AS writes,
           EXISTS (SELECT FROM {s}.packed_terms) AS terms
    FROM {s}.corpus_stats st LEFT JOIN {s}.packed_build pb ON true
    """
)
SNAPSHOT = Statement(
    "SELECT n_docs, generation, generation - logged AS unlogged FROM {s}.corpus_stats"
)
FREQUENT = Statement(
    "SELECT term, sum(n) AS df FROM {s}.postings GROUP BY term HAVING sum(n) >= $1 ORDER BY term"
)
# The blocks of the terms $1, each array column's binary values concatenated (as
# ``terms_read.TERMS`` reads them).
BLOCKS_OF = Statement(
    """
    SELECT array_agg(p.term) AS terms, array_agg(p.n) AS sizes,
           string_agg(array_send(p.chunks), ''::bytea) AS chunks,
           string_agg(array_send(p.tfs), ''::bytea) AS tfs,
           string_agg(array_send(p.doc_lens), ''::bytea) AS doc_lens
    FROM unnest($1::int8[]) AS q(term) CROSS JOIN LATERAL (
        SELECT p.term, p.n, p.chunks, p.tfs, p.doc_lens FROM {s}.postings p
        WHERE p.term = q.term OFFSET 0
    ) p
    """
)
# In the build's snapshot, these delete only the rows it sees (rows a write commits later stay).
CLEAR = tuple(
    Statement(f"DELETE FROM {{s}}.{table}")
    for table in ("packed_terms", "packed_inserts", "packed_gone", "packed_build")
)
RECORD = Statement(
    """
    INSERT INTO {s}.packed_build
        (build, unlogged, generation, n_docs, min_df, terms, postings, lengths)
    VALUES (pg_current_xact_id()::text::int8, $1, $2, $3, $4, $5, $6, $7)
    """
)
NO_STATEMENT_TIMEOUT: Final = "SET LOCAL statement_timeout = 0"


@dataclass(frozen=True, slots=True)
class PackConfig:
    """When a project's common terms are packed (see the module docstring)."""

    min_docs: int = PACK_MIN_DOCS
    min_df: int = PACK_MIN_DF
    rebuild_share: float = PACK_REBUILD_SHARE
    rebuild_min: int = PACK_REBUILD_MIN
    read_postings: int = PACK_READ_POSTINGS


def due(state: Any, config: PackConfig) -> bool:
    """Whether a project in ``state`` (a ``STATE`` row) is to be packed (again)."""
    if state["n_docs"] < config.min_docs:
        return False
    if state["built_unlogged"] is None or state["unlogged"] != state["built_unlogged"]:
        return True  # never built, or a write logged nothing since
    changed = int(state["gone"]) + int(state["inserted"])
    if changed > max(config.rebuild_min, config.rebuild_share * int(state["built_docs"])):
        return True
    return int(state["writes"]) > PACKED_MAX_WRITES // 2


class Packing:
    """The packed postings of one project."""

    def __init__(self, database: PgDatabase, project_id: str, config: PackConfig) -> None:
        self._db = database
        self._project_id = project_id
        self._config = config

    async def optimize(self) -> None:
        """Pack the project's common terms if ``due``; drop a build and the logs of a project
        too small for one. One process at a time: another already at it is left to it."""
        ws = await self._db.workspace(self._project_id)
        async with self._db.connection() as conn:
            db = ProjectSession.of(conn, ws)
            key = lock_key(ws.schema, "packed")
            if not await conn.fetchval(TRY_LOCK, key):
                return
            try:
                state = await conn.fetchrow(db.sql(STATE))
                if due(state, self._config):
                    await self._build(db)
                elif state["n_docs"] < self._config.min_docs and (
                    state["built_unlogged"] is not None
                    or state["terms"]
                    or state["gone"]
                    or state["writes"]
                ):
                    async with conn.transaction():
                        for clear in CLEAR:
                            await conn.execute(db.sql(clear))
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute(UNLOCK, key)

    async def _build(self, db: ProjectSession) -> None:
        """Pack every term with ``min_df`` postings or more, from one snapshot, in place of
        the last build, and delete the logs that snapshot sees."""
        conn = db.conn
        config = self._config
        async with conn.transaction(isolation="repeatable_read"):
            await conn.execute(NO_STATEMENT_TIMEOUT)
            snapshot = await conn.fetchrow(db.sql(SNAPSHOT))
            frequent = await conn.fetch(db.sql(FREQUENT), config.min_df)
            for clear in CLEAR:
                await conn.execute(db.sql(clear))
            postings = 0
            lengths = SeenLengths()
            for keys in _batches(frequent, config.read_postings):
                row = await conn.fetchrow(db.sql(BLOCKS_OF), keys)
                records = await asyncio.to_thread(packed_records, row, lengths)
                postings += sum(r[1] for r in records)
                await conn.copy_records_to_table(
                    "packed_terms",
                    schema_name=db.schema,
                    columns=("term", "n", "data"),
                    records=records,
                )
            await conn.execute(
                db.sql(RECORD),
                snapshot["unlogged"],
                snapshot["generation"],
                snapshot["n_docs"],
                config.min_df,
                len(frequent),
                postings,
                await asyncio.to_thread(lengths.packed),
            )


def _batches(frequent: list[asyncpg.Record], most: int) -> list[list[int]]:
    """The keys of ``frequent`` (term, df) in batches of at most ``most`` postings (a term
    with more alone)."""
    out: list[list[int]] = []
    size = 0
    for row in frequent:
        df = int(row["df"])
        if not out or size + df > most:
            out.append([])
            size = 0
        out[-1].append(int(row["term"]))
        size += df
    return out


class SeenLengths:
    """The length of each chunk seen by a build, by seq (a dense array: 4 bytes a seq)."""

    def __init__(self) -> None:
        import numpy as np

        self._by_seq = np.zeros(0, dtype=np.int32)

    def add(self, seqs: Any, lens: Any) -> None:
        import numpy as np

        top = int(seqs.max()) + 1 if len(seqs) else 0
        if top > len(self._by_seq):
            grown = np.zeros(max(top, 2 * len(self._by_seq)), dtype=np.int32)
            grown[: len(self._by_seq)] = self._by_seq
            self._by_seq = grown
        self._by_seq[seqs] = lens

    def packed(self) -> bytes:
        """``packed.pack_lengths`` of every chunk seen (a chunk holding a term has a length of
        at least 1)."""
        import numpy as np

        from codebase_mcp_search.adapters.postgres.packed import pack_lengths

        seqs = np.flatnonzero(self._by_seq)
        return pack_lengths(seqs, self._by_seq[seqs])


def packed_records(row: asyncpg.Record, lengths: SeenLengths) -> list[tuple[int, int, bytes]]:
    """The (term, postings, packed value) of each term of a ``BLOCKS_OF`` row; each chunk's
    length goes to ``lengths``."""
    import numpy as np

    from codebase_mcp_search.adapters.postgres.chunk_store.blocks import raw
    from codebase_mcp_search.adapters.postgres.chunk_store.terms import groups
    from codebase_mcp_search.adapters.postgres.packed import pack

    found = raw(row)
    if found is None:
        return []
    lengths.add(found.chunks, found.lens)
    out: list[tuple[int, int, bytes]] = []
    for key, part in sorted(groups(found.terms, found.sizes).items()):
        chunks = found.chunks[part]
        order = np.argsort(chunks, kind="stable")
        out.append((key, len(chunks), pack(chunks[order], found.tfs[part][order])))
    return out
