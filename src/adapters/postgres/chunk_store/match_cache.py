"""The matches of the filters last searched, kept in the process (``KeptMatches``, over
``filter_matches.FilterMatches``).

Kept per (filter, segments, generation): a generation is moved on by every write of chunk
rows, so what one snapshot counted holds for every snapshot of the same generation, and
repeated searches of a directory skip the pass, as a search engine's filter cache does. A
search reads the generation in its own snapshot, so nothing kept is ever stale; the least
recently used filters go first.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import asyncpg

from codebase_mcp_search.adapters.postgres.chunk_store.filter_matches import (
    FilterMatches,
    Matches,
)
from codebase_mcp_search.adapters.postgres.chunk_store.filters import SqlFilter
from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession


class KeptMatches:
    """``FilterMatches`` with the matches of the last ``max_filters`` filters kept."""

    def __init__(self, inner: FilterMatches, max_filters: int) -> None:
        self._inner = inner
        self._max = max_filters
        self._kept: collections.OrderedDict[tuple[Any, ...], Matches] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()

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
            return found
        found = await self._inner.count(db, flt, stats, segments)
        kept[key] = found
        while len(kept) > self._max:
            kept.popitem(last=False)
        return found
