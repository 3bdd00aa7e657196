"""What a ``PgChunkStore`` keeps in the process between statements, and the budget of each.

Each cache is a wrapper with the interface of the component it spares statements of; the
store layers it on top when its budget is not 0, and uses the plain component alone when it
is (``PgCaches.off()``: every one). What a cache keeps answers only while it is known to be
current; each module says how it knows (chunk rows that never change, the change token of
``adapters.postgres.changes``, the project's generation read with the search).

- ``chunk_cache.ChunkCache`` over ``chunk_reader.ChunkReader``: chunks by seq, and their
  context lines once read for a hit (``chunk_chars``, characters);
- ``postings_cache.HeldPostings`` over ``lexical_search.LexicalSearch``: the postings of the
  terms searched, with their BM25 (``postings``, postings);
- ``vector_copy.VectorCopy`` over ``vector_search.VectorSearch``: a small project's vectors
  (``vector_floats``, floats);
- ``match_cache.KeptMatches`` over ``filter_matches.FilterMatches``: the chunks matching the
  filters last searched, per ANN segment (``filter_matches``, filters);
- ``memos.KeptRepositories`` over ``repositories.RepositoryReader``: the repository list
  (``repositories``, on or off);
- ``memos.KeptDimension`` over ``model_guard.StoredDimension``: the vector dimension
  (``dimension``, on or off).

Each budget here bounds one project's cache; every cache but the dimension's (an int) also
charges its bytes to the process's ``cache_ledger.CacheLedger`` (``PgDatabase.cache_ledger``),
whose one budget bounds every project's caches together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# The text of the chunks kept read, in characters: 16 MB of ASCII.
CHUNK_CHARS: Final = 16_000_000
# Postings kept (a chunk, frequency and length each: 11 to 16 bytes): 90 to 128 MB, the
# common terms of a million chunks (~7 million postings in the 19 terms of 100,000 or more).
# The process budget (cache_ledger) bounds it with every other cache.
POSTINGS: Final = 8_000_000
# A project's vectors copied into a server process for exact search: up to 48 MB of float32
# (10,000 vectors of 1,024 dimensions, or every vector of a 31,000-chunk project at 384).
VECTOR_FLOATS: Final = 12_000_000
# Filters whose matches per ANN segment are kept.
FILTERS: Final = 32


@dataclass(frozen=True, slots=True)
class PgCaches:
    """The budget of each cache of a ``PgChunkStore`` (see the module docstring); 0 (or
    False) leaves that component uncached."""

    chunk_chars: int = CHUNK_CHARS
    postings: int = POSTINGS
    vector_floats: int = VECTOR_FLOATS
    filter_matches: int = FILTERS
    repositories: bool = True
    dimension: bool = True

    @classmethod
    def off(cls) -> PgCaches:
        """Every cache off: each statement runs for every call."""
        return cls(0, 0, 0, 0, repositories=False, dimension=False)
