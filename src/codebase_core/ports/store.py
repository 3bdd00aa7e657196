"""The chunk store, by role: a project's repositories, its files' indexed snapshots, the writing
of them (the lexical layer), the vectors of their chunks written after (the semantic layer),
the retrieval of chunks for a search, and the embedding cache.

``ChunkStore`` is every role at once (what an adapter implements); a service depends on the
roles it uses: ``IndexStore`` for indexing, ``SearchStore`` for search, ``RepositoryCatalog``
alone for listing and removing repositories. Contracts shared by every role:

- One store is one project. Unknown repository ids raise ``RepositoryNotFound`` where a
  method takes one to act on; infrastructure failures raise ``StoreUnavailable``.
- One embedding model per store: vectors of two models are never compared (see
  ``RepositoryCatalog.save_repository``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models import (
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    SourceFile,
    StemGroup,
)


class IndexedFile(Protocol):
    """What ``ChunkWriter.replace_files`` stores for one file (``models.PreparedFile`` is one)."""

    @property
    def file(self) -> SourceFile: ...
    @property
    def text(self) -> str: ...
    @property
    def chunks(self) -> Sequence[Chunk]: ...
    @property
    def vectors(self) -> Sequence[Sequence[float] | None] | None: ...


@runtime_checkable
class RepositoryCatalog(Protocol):
    """The repositories of a project.

    Contract: repositories read back carry live ``file_count``, ``chunk_count`` and
    ``vector_count`` computed by the store (the values given to ``save_repository`` are
    ignored). ``save_repository`` with
    a model other than the one whose vectors the store holds raises ``ModelMismatch`` while
    another repository holds such vectors; otherwise it switches the store to the new model and
    drops this repository's old vectors.
    """

    async def save_repository(self, repository: Repository) -> None:
        """Insert or replace a repository's metadata (keyed by id)."""
        ...

    async def get_repository(self, repository_id: str) -> Repository:
        """The repository with this id; ``RepositoryNotFound`` otherwise."""
        ...

    async def find_repository(self, path: str) -> Repository | None:
        """The repository rooted at this absolute path, if indexed."""
        ...

    async def list_repositories(self) -> list[Repository]:
        """Every repository, by name then id."""
        ...

    async def delete_repository(self, repository_id: str) -> None:
        """Remove a repository with all its files and chunks; ``RepositoryNotFound`` if absent."""
        ...


@runtime_checkable
class FileSnapshots(Protocol):
    """What is indexed of each file: its content hash, its text and its chunks."""

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        """Indexed files of a repository (or those of ``paths`` that are indexed): relative
        path to content hash."""
        ...

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        """The indexed snapshot text of the given files (missing ones are left out)."""
        ...

    async def chunks(self, repository_id: str) -> list[Chunk]:
        """Every chunk of a repository, by (file_path, start_line, end_line)."""
        ...


@runtime_checkable
class ChunkWriter(Protocol):
    """The writes of an indexing run.

    Contract:
    - ``replace_files`` replaces, for each file given, every chunk and the stored text of that
      file in one atomic step: a concurrent reader sees the old chunks or the new, never a mix.
      ``vectors`` is None (lexical only) or holds one entry per chunk, in order: its vector, or
      None for a chunk left to the semantic layer (``VectorWriter``). Vectors
      stored this way are served by ``EmbeddingCache.cached_embeddings`` under the
      repository's embedding model, also after their chunks are replaced or deleted.
    - ``indexing_lock`` serialises indexing of one repository (across processes where the
      store is shared); with ``wait=False`` a held lock raises ``RepositoryBusy``.
    - ``optimize`` finishes index maintenance after a run of writes (it may be slow; a no-op
      where there is nothing to build).
    """

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        """Atomically replace each file's text and chunks (and vectors)."""
        ...

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns how many files were removed."""
        ...

    def indexing_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        """Held while one indexing run writes this repository."""
        ...

    async def optimize(self) -> None:
        """Build what searches rely on after writes (ANN indexes); see class doc."""
        ...


@runtime_checkable
class VectorWriter(Protocol):
    """The writes of the semantic layer: vectors for chunks the lexical layer wrote without one.

    Contract:
    - ``vector_backlog`` gives chunks of the repository that hold no vector, in the order they
      were written, at most ``limit`` (none once every chunk holds one).
    - ``set_vectors`` stores, in one atomic step, the vector of each chunk of ``vectors`` (by
      chunk id) that is still indexed in the repository and holds none; it returns how many
      it stored (a chunk replaced or deleted since is skipped: its id is gone). The vectors
      are of the repository's embedding model (``ModelMismatch`` when another model's vectors,
      or another dimension, are held beside them) and serve ``EmbeddingCache`` under it.
    - ``vectors_lock`` serialises runs of the semantic layer of one repository (across
      processes where the store is shared), apart from ``ChunkWriter.indexing_lock``: a
      lexical run never waits for it. With ``wait=False`` a held lock raises
      ``RepositoryBusy``.
    """

    async def vector_backlog(self, repository_id: str, limit: int) -> list[Chunk]:
        """Chunks still without a vector, oldest first (see class doc)."""
        ...

    async def set_vectors(self, repository_id: str, vectors: Mapping[str, Sequence[float]]) -> int:
        """Store the vectors of chunks that hold none; how many were stored (see class doc)."""
        ...

    def vectors_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        """Held while one run builds this repository's vectors."""
        ...


@runtime_checkable
class ChunkRetrieval(Protocol):
    """The candidates of a search, and the context of its hits.

    Contract:
    - ``vector_search`` ranks chunks that have vectors by cosine similarity (score in [-1, 1]),
      descending, ties by (file_path, start_line, repository_id), whatever the store holds
      in memory; it returns the top ``limit`` passing ``filters`` and the count of all chunks
      with vectors that pass them.
    - ``lexical_search`` ranks by BM25 (``core.lexical``: same analyser, k1 and b; document
      statistics over every chunk in the store) the chunks containing at least one of
      ``terms`` or of a ``stems`` group's; it returns the top ``limit`` passing ``filters``
      (ties by (file_path, start_line), then in an order the store keeps at every call) and
      the count of all chunks passing the filters that contain one.
      Without ``stems`` it is the search it was before groups existed, exactly.
    """

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        """Top chunks by cosine similarity, and the number of candidates (see class doc)."""
        ...

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        """Top chunks by BM25 over analysed ``terms`` and the ``stems`` groups (each scored
        as one more term, ``StemGroup``), and the number matching (see class doc)."""
        ...

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        """Chunks meeting ``filters`` whose symbol holds one of ``names`` exactly (the rule of
        ``models.symbol_names``: a qualified symbol's last part; each of a merged chunk's),
        at most ``limit``, by (file_path, start_line, end_line, id). An indexed lookup, not a
        scan: a search calls it for every name it is asked."""
        ...

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        """For each of ``chunks`` still indexed, by id: the ``CONTEXT_LINES`` lines before
        and after it in its file's indexed text, each group joined by ``\\n`` (what
        ``models.context_lines`` gives). A search asks this of its hits only."""
        ...

    async def without_vectors(self, chunk_ids: Sequence[str]) -> set[str]:
        """Of ``chunk_ids``, those of indexed chunks holding no vector (a hybrid search over a
        semantic layer still being built scores them lexically alone)."""
        ...


@runtime_checkable
class EmbeddingCache(Protocol):
    """Vectors by (model, chunk content hash): an unchanged chunk is never embedded twice."""

    async def cached_embeddings(
        self, model: str, content_hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        """Cached vectors for (model, chunk content hash); unknown hashes are left out."""
        ...

    async def cache_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Remember vectors by (model, chunk content hash)."""
        ...


@runtime_checkable
class IndexStore(
    RepositoryCatalog, FileSnapshots, ChunkWriter, VectorWriter, EmbeddingCache, Protocol
):
    """The roles an indexing run uses (both layers)."""


@runtime_checkable
class SearchStore(RepositoryCatalog, FileSnapshots, ChunkRetrieval, Protocol):
    """The roles a search uses (the snapshots' hashes tell its stale hits)."""


@runtime_checkable
class ChunkStore(IndexStore, SearchStore, Protocol):
    """Every role of one project's store: what a store adapter implements."""
