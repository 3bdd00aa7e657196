"""The matches of the filters last searched, kept in the process (``KeptMatches``, over
``filter_matches.FilterMatches``).

Kept per (filter, segments, generation): a generation is moved on by every write of chunk
rows, so what one snapshot counted holds for every snapshot of the same generation, and
repeated searches of a directory skip the pass, as a search engine's filter cache does. A
search reads the generation in its own snapshot, so nothing kept is ever stale; the least
recently used filters go first, also when the process's budget (``cache_ledger``) takes bytes
back (``matches_bytes`` an entry).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any, Final

import asyncpg

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, unbounded
from codebase_mcp_search.adapters.postgres.chunk_store.filter_matches import (
    FilterMatches,
    Matches,
)
from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession

# Bytes of an entry beyond its seqs: its key (the filter's SQL is shared with the statement
# cache; its parameters and segments are small tuples), the ``Matches`` and its two dicts.
MATCHES_OVERHEAD: Final = 1_000
# A bucket's count and its slots in the two dicts, and an array's header.
BUCKET_BYTES: Final = 200


def matches_bytes(found: Matches) -> int:
    return (
        MATCHES_OVERHEAD
        + BUCKET_BYTES * len(found.counts)
        + sum(BUCKET_BYTES + seqs.itemsize * len(seqs) for seqs in found.seqs.values())
    )


class KeptMatches:
    """``FilterMatches`` with the matches of the last ``max_filters`` filters kept, accounted
    to ``ledger`` as ``project``'s ``matches``."""

    def __init__(
        self,
        inner: FilterMatches,
        max_filters: int,
        ledger: CacheLedger | None = None,
        project: str = "",
    ) -> None:
        self._inner = inner
        self._max = max_filters
        self._kept: collections.OrderedDict[tuple[Any, ...], Matches] = collections.OrderedDict()
        self._account = (ledger or unbounded()).account(
            project, "matches", self._evict_oldest, self.clear
        )

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()
        self._account.credit(self._account.bytes)

    async def count(
        self,
        db: ProjectSession,
        flt: SqlFilter,
        stats: asyncpg.Record,
        segments: Sequence[tuple[int, int]],
    ) -> Matches:
        key = (flt.sql, tuple(flt.params), tuple(segments), int(stats["generation"]))
        kept = self._kept
        found = kept.get(key)
        if found is not None:
            kept.move_to_end(key)
            self._account.touch()
            return found
        found = await self._inner.count(db, flt, stats, segments)
        nbytes = matches_bytes(found)
        if key in kept or not self._account.fits(nbytes):
            return found
        kept[key] = found
        self._account.charge(nbytes)
        while len(kept) > self._max and self._evict_oldest():
            pass
        return found

    def _evict_oldest(self) -> bool:
        if not self._kept:
            return False
        _, dropped = self._kept.popitem(last=False)
        self._account.credit(matches_bytes(dropped))
        return True
