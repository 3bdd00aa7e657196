"""How the ANN (HNSW) indexes of a project are laid out and when they are built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from codebase_mcp_search.core import defaults

# The layout's tuning, private to this adapter (what a user sets, the HNSW build parameters
# m and ef_construction, is in ``core.defaults`` with the other settings).
ANN_EF_SEARCH_MIN: Final = 64
ANN_EF_SEARCH_MAX: Final = 400
ANN_EXACT_SEGMENT_ROWS: Final = 2_000
ANN_MIN_ROWS: Final = 10_000
ANN_SEGMENT_ROWS: Final = 16_384
ANN_TAIL_ROWS: Final = 2_000
ANN_MAX_SEGMENTS: Final = 8
ANN_EXACT_ROWS: Final = 8_000
ANN_BUILD_MEMORY_MB: Final = 512
ANN_FINAL_BUILD_WORKERS: Final = 1


@dataclass(frozen=True, slots=True)
class AnnConfig:
    """ANN strategy: partial HNSW indexes ("segments") over ranges of chunk insertion order.

    Rows past the last segment (the *tail*) are searched exactly. A segment is built in the
    background, without blocking writes (``CREATE INDEX CONCURRENTLY``), once the tail holds
    ``segment_rows`` vectors, so a large load never pays per-row HNSW inserts and the build of
    one segment overlaps the chunking and embedding of the next. At the end of an indexing run
    (``ChunkStore.optimize``) a tail of ``tail_rows`` or more becomes a segment too, and adjacent
    small segments are merged while there are more than ``max_segments``. A project with fewer
    than ``min_rows`` vectors has no ANN index at all: exact search is faster there.

    A search whose filters leave at most ``exact_rows`` candidates scans them exactly. Otherwise
    each segment is planned from its own count of matches: none, skipped; at most
    ``exact_segment_rows``, or too few for an HNSW candidate list of ``ef_search_max`` to hold
    ``limit`` of them after filtering, scanned exactly; else walked by HNSW with
    ``hnsw.ef_search`` widened to the least selective need. Any ANN search that returns fewer
    than ``limit`` hits while more match is redone exactly, so filters never cost completeness.

    An unfiltered search of a project searched exactly is answered from a copy of its vectors
    in the process, within its budget (``PgCaches.vector_floats``; ``chunk_store.vector_copy``).

    Defaults: ``ANN_*`` above; ``m`` and ``ef_construction`` from ``core.defaults``.
    """

    m: int = defaults.ANN_M
    ef_construction: int = defaults.ANN_EF_CONSTRUCTION
    ef_search_min: int = ANN_EF_SEARCH_MIN
    ef_search_max: int = ANN_EF_SEARCH_MAX
    exact_segment_rows: int = ANN_EXACT_SEGMENT_ROWS
    min_rows: int = ANN_MIN_ROWS
    segment_rows: int = ANN_SEGMENT_ROWS
    tail_rows: int = ANN_TAIL_ROWS
    max_segments: int = ANN_MAX_SEGMENTS
    exact_rows: int = ANN_EXACT_ROWS
    build_memory_mb: int = ANN_BUILD_MEMORY_MB
    final_build_workers: int = ANN_FINAL_BUILD_WORKERS
