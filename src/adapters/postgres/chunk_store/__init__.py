"""PgChunkStore: one project's repositories, chunks, vectors (pgvector) and BM25 postings.

The package's modules, each owning one concern:

- ``store``: ``PgChunkStore``, the port methods, each delegating to the modules below.
- ``session``: ``ProjectSession``, a connection bound to the project's schema, with the
  statements several operations share (deleting chunks with their postings, counts, locks).
- ``rows``: the columns of a chunk, and the COPY records and postings blocks of a write.
- ``filters``: ``SearchFilters`` as SQL conditions, and the narrowing of a repository filter.
- ``vector_search``: filter matches per ANN segment (and their cache), ANN vs exact scans.
- ``lexical_search``: the BM25 statement and ties at the limit.
- ``segments``: building, merging and dropping ANN segments, and the vacuum after a load.
- ``model_guard``: the one-model rule as applied to what the project holds.
- ``embedding_cache``: vectors kept by model and content hash, and reused from stored chunks.
"""

from codebase_mcp_search.adapters.postgres.chunk_store.store import PgChunkStore

__all__ = ["PgChunkStore"]
