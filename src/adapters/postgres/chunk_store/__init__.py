"""PgChunkStore: one project's repositories, chunks, vectors (pgvector) and BM25 postings.

The package's modules, each owning one concern:

- ``store``: ``PgChunkStore``, the port methods, and its components layered with their caches.
- ``session``: ``ProjectSession``, a connection bound to the project's schema, with the
  statements several operations share (deleting chunks with their postings, counts, locks);
  ``OnDemand``, a session opened only when a read needs one.
- ``rows``: the columns of a chunk, and the COPY records and postings blocks of a write.
- ``filters``: ``SearchFilters`` as SQL conditions, and the narrowing of a repository filter.
- ``repositories``: the repository rows read back.
- ``chunk_reader``: chunks read back by seq for a search, with their places and contexts.
- ``vector_search``: ANN vs exact scans; ``filter_matches``: a filter's matches per segment.
- ``lexical_search``: BM25 search and ties at the limit; ``blocks``: a blocks row decoded;
  ``terms_read`` and ``terms``: an unfiltered search's terms read (from their blocks, or packed
  and corrected by the writes since) and decoded; ``sums``: their BM25 summed per chunk, only
  for the chunks that may reach the top; ``packing``: a large project's common terms packed;
  ``stem_terms``: a search's stem groups, each merged into one more term.
- ``segments``: building, merging and dropping ANN segments, and the vacuum after a load.
- ``model_guard``: the one-model rule as applied to what the project holds.
- ``embedding_cache``: vectors kept by model and content hash, and reused from stored chunks.
- ``caches``: ``PgCaches``, the budgets of what the store keeps in the process, each kept by
  a wrapper over one of the components above: ``chunk_cache``, ``postings_cache``,
  ``vector_copy``, ``match_cache``, ``memos`` (the repository list, the vector dimension).

numpy is imported inside the functions that use it (vectors, writes, large BM25 rows): a
process that only searches by exact terms (the CLI) never loads it (``blocks.plain``).
"""

from codebase_mcp_search.adapters.postgres.chunk_store.caches import PgCaches
from codebase_mcp_search.adapters.postgres.chunk_store.store import PgChunkStore

__all__ = ["PgCaches", "PgChunkStore"]
