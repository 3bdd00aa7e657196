"""Ports: the protocols the domain talks to. Adapters implement them; services depend on them.

Every I/O port is async. ``Chunker`` and ``TokenCounter`` are synchronous because they are pure
CPU work over a string: making them coroutines would only add scheduling overhead per file.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.chunking import PreparedFile
from codebase_mcp_search.core.errors import FileUnreadable
from codebase_mcp_search.core.models import (
    Chunk,
    ChunkDraft,
    Embeddings,
    Job,
    JobOutcome,
    JobPage,
    JobProgress,
    JobStatus,
    Repository,
    ScanEntry,
    ScanResult,
    ScoredChunk,
    SearchFilters,
    SourceFile,
    Task,
    TaskPage,
    TaskStatus,
)


class IndexedFile(Protocol):
    """What ``ChunkStore.replace_files`` stores for one file (see ``services.indexing``)."""

    @property
    def file(self) -> SourceFile: ...
    @property
    def text(self) -> str: ...
    @property
    def chunks(self) -> Sequence[Chunk]: ...
    @property
    def vectors(self) -> Sequence[Sequence[float]] | None: ...


@runtime_checkable
class ChunkStore(Protocol):
    """Repositories, their files' indexed snapshots, chunks, vectors and the embedding cache.

    Contract:
    - ``replace_files`` replaces, for each file given, every chunk and the stored text of that
      file in one atomic step: a concurrent reader sees the old chunks or the new, never a mix.
      ``vectors`` is None (lexical only) or holds one vector per chunk, in order. Vectors
      stored this way are served by ``cached_embeddings`` under the repository's embedding
      model, also after their chunks are replaced or deleted.
    - ``vector_search`` ranks chunks that have vectors by cosine similarity (score in [-1, 1]),
      descending, ties by (file_path, start_line); it returns the top ``limit`` passing
      ``filters`` and the count of all chunks with vectors that pass them.
    - ``lexical_search`` ranks by BM25 (``core.lexical``: same analyser, k1 and b;
      document statistics over every chunk in the store) the chunks containing at least one
      of ``terms``; it returns the top ``limit`` passing ``filters`` (ties as above) and the
      count of all chunks passing the filters that contain a term.
    - One embedding model per store (project): ``save_repository`` with a model other than the
      one whose vectors the store holds raises ``ModelMismatch`` while another repository holds
      such vectors; otherwise it switches the store to the new model and drops this
      repository's old vectors.
    - ``indexing_lock`` serialises indexing of one repository (across processes where the
      store is shared); with ``wait=False`` a held lock raises ``RepositoryBusy``.
    - ``optimize`` finishes index maintenance after a run of writes (it may be slow; a no-op
      where there is nothing to build).
    - Repositories read back carry live ``file_count`` and ``chunk_count`` computed by the store
      (the values given to ``save_repository`` are ignored).
    - Unknown repository ids raise ``RepositoryNotFound`` where a method takes one to act on;
      infrastructure failures raise ``StoreUnavailable``.
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

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        """Indexed files of a repository (or those of ``paths`` that are indexed): relative
        path to content hash."""
        ...

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        """Atomically replace each file's text and chunks (and vectors)."""
        ...

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns how many files were removed."""
        ...

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        """The indexed snapshot text of the given files (missing ones are left out)."""
        ...

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        """For each of ``chunks`` still indexed, by id: the ``CONTEXT_LINES`` lines before
        and after it in its file's indexed text, each group joined by ``\n`` (what
        ``models.context_lines`` gives). A search asks this of its hits only."""
        ...

    async def chunks(self, repository_id: str) -> list[Chunk]:
        """Every chunk of a repository, by (file_path, start_line, end_line)."""
        ...

    async def cached_embeddings(
        self, model: str, content_hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        """Cached vectors for (model, chunk content hash); unknown hashes are left out."""
        ...

    async def cache_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Remember vectors by (model, chunk content hash)."""
        ...

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        """Top chunks by cosine similarity, and the number of candidates (see class doc)."""
        ...

    async def lexical_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        """Top chunks by BM25 over analysed ``terms``, and the number matching (see class doc)."""
        ...

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        """Chunks meeting ``filters`` whose symbol holds one of ``names`` exactly (the rule of
        ``models.symbol_names``: a qualified symbol's last part; each of a merged chunk's),
        at most ``limit``, by (file_path, start_line, end_line, id). An indexed lookup, not a
        scan: a search calls it for every name it is asked."""
        ...

    def indexing_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        """Held while one indexing run writes this repository."""
        ...

    async def optimize(self) -> None:
        """Build what searches rely on after writes (ANN indexes); see class doc."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors.

    Contract: ``embed_documents`` returns one vector per input text, in order, each of
    ``dimension`` floats (L2 norm need not be 1); a text longer than the model takes is
    embedded from its beginning and counted in ``Embeddings.truncated``, never refused.
    ``model`` names the model so that stored vectors are never mixed across models. A server
    or model that cannot be used raises ``EmbedderUnavailable`` (after the adapter's own
    retries of transient failures).
    """

    @property
    def model(self) -> str:
        """A stable name of the model (part of the embedding cache key)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        """Vectors for chunks of code or text to be stored."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector for a search query (models may treat queries differently)."""
        ...


@runtime_checkable
class TaskRepo(Protocol):
    """Persistent development tasks.

    Contract: ``add`` stores a new task (its id must be new); ``get`` and ``update`` raise
    ``TaskNotFound`` for an unknown id; ``list`` returns tasks newest first (created_at
    descending, then id) filtered by status and branch membership, with the total number of
    matches before ``limit``/``offset``. Infrastructure failures raise ``StoreUnavailable``.
    """

    async def add(self, task: Task) -> None:
        """Store a new task."""
        ...

    async def get(self, task_id: str) -> Task:
        """The task with this id."""
        ...

    async def update(self, task: Task) -> None:
        """Replace a stored task with this one (same id)."""
        ...

    async def list(
        self,
        *,
        status: TaskStatus | None = None,
        branch: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> TaskPage:
        """A page of tasks, newest first."""
        ...


@runtime_checkable
class JobQueue(Protocol):
    """Background indexing jobs, shared by every worker of a store (all projects).

    Contract:
    - ``submit`` stores a new pending job; while a job for the same (project_id, repo_path) is
      pending, running or blocked it raises ``DuplicateJob`` naming that job's id instead.
    - ``get`` raises ``JobNotFound``; ``list`` gives jobs newest first (created_at, then id,
      descending) filtered by status and project, with the total before ``limit``/``offset``.
    - ``claim`` gives ``worker_id`` the oldest job that is pending, or running or blocked with
      an expired lease (its worker died), as ``running`` with a lease of ``lease_s`` seconds;
      concurrent claims never get the same job. A claimed job whose cancellation was asked is
      ended ``cancelled`` instead of returned. None when nothing is claimable.
    - ``renew`` extends the lease of a job ``worker_id`` holds and records ``progress``; it
      returns the job (``cancel_requested`` tells the worker to stop). ``finish`` moves a held
      job to an outcome's status (the state machine of ``models.jobs``, else
      ``InvalidStatus``); ``blocked`` keeps the lease, a terminal status ends it. Both raise
      ``JobLeaseLost`` when the worker no longer holds the job.
    - ``request_cancel``: a pending job, or one whose lease expired, ends ``cancelled`` at
      once; a running or blocked one is marked for its worker to stop; a terminal one raises
      ``InvalidStatus`` naming its status.
    - ``release`` lets a worker that shuts down hand its held jobs back (lease expired), so
      the next worker resumes them at once. ``purge`` deletes terminal jobs finished before
      ``before`` and returns how many.
    - Infrastructure failures raise ``StoreUnavailable``.
    """

    async def submit(self, job: Job) -> Job:
        """Store a new pending job (see class doc)."""
        ...

    async def get(self, job_id: str) -> Job:
        """The job with this id."""
        ...

    async def list(
        self,
        *,
        status: JobStatus | None = None,
        project_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> JobPage:
        """A page of jobs, newest first."""
        ...

    async def claim(self, worker_id: str, lease_s: float) -> Job | None:
        """The next job for this worker, now running and leased to it."""
        ...

    async def renew(
        self, job_id: str, worker_id: str, lease_s: float, progress: JobProgress | None
    ) -> Job:
        """Extend a held job's lease, recording its progress."""
        ...

    async def finish(self, job_id: str, worker_id: str, outcome: JobOutcome) -> Job:
        """Move a held job to ``outcome.status`` (blocked, running again, or terminal)."""
        ...

    async def request_cancel(self, job_id: str) -> Job:
        """Cancel a job, or ask its worker to (see class doc)."""
        ...

    async def release(self, worker_id: str) -> int:
        """Hand back every job this worker holds; returns how many."""
        ...

    async def purge(self, before: datetime) -> int:
        """Delete terminal jobs that ended before ``before``."""
        ...


@runtime_checkable
class SourceTree(Protocol):
    """Lists and reads the files of a repository on disk.

    Contract: ``scan`` returns every indexable file below ``root`` (paths relative, with
    ``/``), hashed with sha256 over the raw bytes, honouring ignore files and exclusions; it
    raises ``ValidationFailed`` when ``root`` is not an existing directory, and reports files it
    had to skip for a reason the user should see (unreadable) in ``errors``. ``read_text``
    decodes one file; it raises ``FileUnreadable`` when the file cannot be read or decoded
    (``read_texts`` returns it in the file's place). ``changed`` never raises for a file: one
    it cannot read counts as changed, and every file ``changed`` reports, ``touched`` reports
    too.
    """

    async def scan(self, root: str) -> ScanResult:
        """All indexable files below ``root``."""
        ...

    async def read_text(self, root: str, path: str) -> str:
        """The decoded text of ``root``/``path``."""
        ...

    async def read_texts(self, root: str, paths: Sequence[str]) -> list[str | FileUnreadable]:
        """``read_text`` of each of ``paths``, in order, with the ``FileUnreadable`` a file
        raised in its place (a batch costs one hop to a thread, not one per file)."""
        ...

    async def touched(self, root: str, paths: Collection[str], since: datetime | None) -> set[str]:
        """Of ``paths``, the files that may differ from the text indexed at ``since``: gone, or
        modified after it (every one when ``since`` is None). Nothing is read: a stat per
        file, so a search checks its hits' files cheaply and hashes only these."""
        ...

    async def changed(
        self, root: str, indexed: Mapping[str, str], since: datetime | None
    ) -> set[str]:
        """Of ``indexed`` (relative path to the content hash it was indexed with), the files
        that are gone or whose bytes differ now. A file not modified after ``since`` is taken
        as unchanged without being read (a stat per file, a hash only of files touched since).
        """
        ...


@runtime_checkable
class Chunker(Protocol):
    """Cuts a file's text into chunks.

    Contract: every non-blank line of ``text`` lies in at least one returned chunk; each chunk's
    lines are 1-based, inclusive, ``start_line <= end_line``, within the file, and its
    ``content`` is exactly those lines joined by newlines; chunks are ordered by start line.
    It never raises on arbitrary text (unparseable code falls back to line windows).
    """

    def chunk(self, path: str, text: str, language: str | None) -> list[ChunkDraft]:
        """Chunks of one file."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts model tokens in text; never raises on any string."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


@runtime_checkable
class ChunkingPool(Protocol):
    """Chunks files on several cores for one indexing run at a time (worker processes).

    Chunking is CPU-bound Python that holds the GIL: more threads would not make it faster,
    other processes do. Starting them costs more than chunking a few files, so the indexing
    service starts a run only when many files changed, after it holds the repository's lock.

    Contract:
    - ``start`` returns at once a ``ChunkingRun`` chunking with copies of ``chunker`` and
      ``tokens`` (which must then be picklable) in up to ``workers`` workers; it begins
      starting them now, so that their start-up overlaps the caller reading the first files.
    - The default, ``core.chunking.ThreadChunkingPool``, chunks in one thread.
    """

    def start(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> ChunkingRun:
        """Workers for one run; the caller must ``close`` it."""
        ...


@runtime_checkable
class ChunkingRun(Protocol):
    """The workers of one indexing run (see ``ChunkingPool``).

    Contract: ``chunk`` returns exactly what ``core.chunking.chunk_files`` returns for
    the same arguments and the run's chunker and token counter, in order; several calls may be
    in flight at once (up to one per worker run in parallel); a worker lost on the way (killed,
    out of memory) does not fail it (the batch is chunked in the caller's process instead).
    ``close`` ends the workers: work of cancelled ``chunk`` calls that no worker has begun is
    dropped, work begun is waited for. It is called once, after every ``chunk`` call ended.
    """

    async def chunk(
        self, repository_id: str, texts: Sequence[tuple[ScanEntry, str]]
    ) -> list[PreparedFile]:
        """``chunk_files`` of (entry, decoded text) pairs, run by a worker."""
        ...

    async def close(self) -> None:
        """End the run's workers (see class doc)."""
        ...
