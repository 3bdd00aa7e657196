"""IndexingService: brings a repository's index up to date with its files, incrementally.

A run scans the files (while the repository's indexing lock is taken, chunking the first of
them meanwhile: ``early``), decides what to do (``decisions``), reads, chunks, embeds and
writes the changed files (``pipeline``), deletes what is gone, and records the repository.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.models import (
    IndexRequest,
    IndexResult,
    PreparedFile,
    Repository,
    ScanResult,
    VectorResult,
    repository_id_for,
    utcnow,
)
from codebase_mcp_search.core.ports import (
    Chunker,
    ChunkingPool,
    ChunkingRun,
    Embedder,
    IndexStore,
    SourceTree,
    TokenCounter,
    embeds_inline,
)
from codebase_mcp_search.core.services.indexing import decisions
from codebase_mcp_search.core.services.indexing.embedding import attach_cached, attach_embedded
from codebase_mcp_search.core.services.indexing.pipeline import Stages, read_and_chunk, run_batches
from codebase_mcp_search.core.services.indexing.progress import (
    CancellationToken,
    ProgressCallback,
    RunCounts,
    report,
)
from codebase_mcp_search.core.services.indexing.speculative import (
    RunStart,
    SpeculativeChunking,
    close_start,
)
from codebase_mcp_search.core.services.indexing.vectors import VectorRun, build_vectors


@dataclass(slots=True)
class IndexRun:
    """One ``index`` call: what was asked, when it began, and the work it has under way."""

    request: IndexRequest
    repo_id: str
    progress: ProgressCallback | None
    token: CancellationToken
    started: float
    """``time.perf_counter()`` at the call (for ``duration_seconds``)."""
    began: datetime
    """When the run's snapshot began: ``indexed_at`` (a file modified after it may be newer
    than what the run read; search marks such hits stale after checking their hash)."""
    scan: asyncio.Future[ScanResult]
    early: SpeculativeChunking
    counts: RunCounts


class IndexingService:
    """Builds a repository's index in two layers: ``index`` scans, diffs by content hash,
    chunks and writes what changed (searchable lexically when it returns; vectors the embedding
    cache holds come with it), and ``build_vectors`` embeds the chunks still without a vector,
    batch by batch (``services.indexing.vectors``).

    Chunking is CPU-bound Python (tree-sitter and tiktoken hold the GIL): it runs in
    ``chunking_pool`` (an adapter's), in one thread unless ``workers`` > 1 and at least
    ``pool_min_files`` files changed, when batches are chunked by that many workers (the
    chunker and token counter must then be picklable).
    """

    def __init__(
        self,
        store: IndexStore,
        source: SourceTree,
        chunker: Chunker,
        tokens: TokenCounter,
        embedder: Embedder | None,
        *,
        chunking_pool: ChunkingPool,
        batch_files: int = defaults.INDEX_BATCH_FILES,
        workers: int | None = None,
        pool_min_files: int = defaults.INDEX_POOL_MIN_FILES,
        vector_batch: int = defaults.VECTOR_BATCH_CHUNKS,
    ) -> None:
        workers = defaults.index_workers() if workers is None else workers
        if batch_files < 1 or workers < 1 or pool_min_files < 0 or vector_batch < 1:
            raise ValueError(
                "batch_files, workers and vector_batch must be >= 1, pool_min_files >= 0"
            )
        self._vector_batch = vector_batch
        self._store = store
        self._source = source
        self._chunker = chunker
        self._tokens = tokens
        self._embedder = embedder
        self._batch_files = batch_files
        self._workers = workers
        self._pool_min_files = pool_min_files
        self._pool = chunking_pool
        self._heads: dict[str, RunStart] = {}

    def head_start(self, root: str) -> None:
        """Begin the next ``index`` of ``root`` (an absolute path) now, for a caller that has
        to wait for the store first (a first index, while the embedded database is created):
        its scan, the chunking of its first files, and, every file being to chunk, the
        worker processes as many files would start. That ``index`` call takes them (unless
        given its own ``cancel``); ``drop_head_starts`` ends those not taken."""
        if root not in self._heads:
            self._heads[root] = head = self._begin(root, CancellationToken())
            head.scan.add_done_callback(self._workers_ahead)

    def _workers_ahead(self, scan: asyncio.Future[ScanResult]) -> None:
        if not scan.cancelled() and scan.exception() is None:
            n, size = len(scan.result().files), self._batch_files
            if decisions.use_workers(
                self._workers, n, min_files=self._pool_min_files, batch_files=size
            ):
                self._pool.prestart(self._workers, self._chunker, self._tokens)

    async def drop_head_starts(self) -> None:
        heads, self._heads = list(self._heads.values()), {}
        for head in heads:
            await close_start(head)

    def _begin(self, root: str, token: CancellationToken) -> RunStart:
        # Neither the scan nor the early chunking needs the database (see the module doc).
        repo_id = repository_id_for(root)
        began = utcnow()
        scan = asyncio.ensure_future(self._scan(root, token))
        threads = self._pool.start(1, self._chunker, self._tokens)
        early = SpeculativeChunking(
            lambda batch: read_and_chunk(self._source, root, repo_id, batch, threads),
            self._batch_files,
            scan,
        )
        return RunStart(began, token, scan, threads, early)

    async def index(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> IndexResult:
        """Index the repository at ``request.root`` (an absolute path).

        Unchanged files (same sha256) are neither read past hashing, nor chunked nor embedded;
        ``request.force`` re-chunks every file but still reuses cached embeddings. Removed files lose
        their chunks. Per-file failures are reported in ``errors`` (status ``partial``).
        Raises ``ValidationFailed`` for a root that is not a directory, ``ModelMismatch`` when the repository was
        indexed with another embedding model and ``request.force`` is not set, ``Cancelled`` when
        ``cancel`` is set (every file already written stays consistent), ``RepositoryBusy``
        when another process indexes the same repository and ``wait`` is False (with ``wait``,
        progress reports phase ``waiting`` and the run starts when the other ends).
        """
        started = time.perf_counter()
        root = request.root
        repo_id = repository_id_for(root)
        head = self._heads.pop(root, None)
        if head is not None and cancel is not None:
            await close_start(head)  # its scan stops on its own token, not the caller's
            head = None
        begun = head or self._begin(root, cancel or CancellationToken())
        token, scan, threads, early = begun.token, begun.scan, begun.threads, begun.early
        run = IndexRun(
            request=request,
            repo_id=repo_id,
            progress=progress,
            token=token,
            started=started,
            began=begun.began,
            scan=scan,
            early=early,
            counts=counts if counts is not None else RunCounts(),
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(self._store.indexing_lock(repo_id, wait=False))
                    await early.stop()
                except RepositoryBusy:
                    await early.close()
                    if not wait:
                        raise
                    # Another process indexes this repository: say so, then queue behind it,
                    # and scan again once it is done.
                    await report(progress, "waiting", 0, 1)
                    await stack.enter_async_context(self._store.indexing_lock(repo_id, wait=True))
                    await _discard(run.scan)
                    run.began = utcnow()
                    run.scan = asyncio.ensure_future(self._scan(root, token))
                return await self._index_locked(run)
        finally:
            await early.close()
            await threads.close()
            await _discard(run.scan)
        raise AssertionError("unreachable")  # pragma: no cover (mypy: AsyncExitStack may swallow)

    async def _scan(self, root: str, token: CancellationToken) -> ScanResult:
        """The scan of ``root``, which stops (``Cancelled``) as soon as ``token`` is set: on a
        large tree it is the longest step without a batch to stop between."""
        return await self._source.scan(root, lambda: token.cancelled)

    async def _index_locked(self, run: IndexRun) -> IndexResult:
        progress = run.progress
        root = run.request.root
        await report(progress, "scanning", 0, 1)
        scan = await run.scan
        counts = run.counts
        counts.files_scanned = len(scan.files)
        await report(progress, "scanning", len(scan.files), len(scan.files))
        run.token.raise_if_cancelled()

        existing = await self._store.find_repository(root)
        model = self._embedder.model if self._embedder is not None else None
        dimension = self._embedder.dimension if self._embedder is not None else None
        force = decisions.rechunk_all(
            existing, model, dimension, force=run.request.force, root=root
        )
        repo_name = decisions.repository_name(run.request.name, existing, root)
        if existing is None or existing.name != repo_name or existing.embedding_model != model:
            # Register first so that files written below always belong to a known repository.
            # With the model from the start: a run that fails midway leaves vectors of it, and
            # a forced model change switches the store before any new vector is written.
            base = existing or Repository(id=run.repo_id, name=repo_name, path=root)
            await self._store.save_repository(
                base.model_copy(
                    update={
                        "name": repo_name,
                        "embedding_model": model,
                        "embedding_dimension": dimension,
                    }
                )
            )
        stored = await self._store.file_hashes(run.repo_id)
        changes = decisions.plan_changes(scan.files, stored, force)
        errors = list(scan.errors)
        total = len(changes.changed)
        counts.files_to_index = total
        await report(progress, "chunking", 0, total)
        units, rest = run.early.take(changes.changed)
        size = self._batch_files
        units.extend((len(b), b) for b in (rest[i : i + size] for i in range(0, len(rest), size)))

        inline = self._embedder is not None and embeds_inline(self._embedder)

        async def embed(prepared: list[PreparedFile]) -> None:
            # The lexical layer takes the vectors the cache holds; the model's work is left to
            # the semantic layer (build_vectors), so the run is searchable as soon as written;
            # an embedder cheaper than a second pass embeds here.
            counts.files_chunked += len(prepared)
            await report(progress, "chunking", counts.files_chunked, total)
            if self._embedder is not None and inline:
                embedded, cached = await attach_embedded(self._store, self._embedder, prepared)
                counts.embedded += embedded
                counts.cached += cached
            elif model is not None:
                counts.cached += await attach_cached(self._store, model, prepared)

        async def write(prepared: list[PreparedFile], n_files: int) -> None:
            await self._store.replace_files(run.repo_id, prepared)
            counts.files_indexed += len(prepared)
            counts.chunks_created += sum(len(p.chunks) for p in prepared)
            counts.files_written += n_files
            await report(progress, "writing", counts.files_written, total)

        def start_chunking() -> tuple[ChunkingRun, int]:
            """Worker processes for many changed files (one batch each, one more ahead),
            else one thread."""
            if decisions.use_workers(
                self._workers, len(rest), min_files=self._pool_min_files, batch_files=size
            ):
                processes = self._pool.start(self._workers, self._chunker, self._tokens)
                return processes, self._workers + 1
            return self._pool.start(1, self._chunker, self._tokens), 1

        prepare = functools.partial(read_and_chunk, self._source, root, run.repo_id)
        await run_batches(units, Stages(prepare, embed, write), start_chunking, run.token, errors)

        scanned = {e.path for e in scan.files}
        to_delete = decisions.files_to_delete(changes.removed, errors, stored, scanned)
        if to_delete:
            await report(progress, "deleting", 0, len(to_delete))
            await self._store.delete_files(run.repo_id, to_delete)
            await report(progress, "deleting", len(to_delete), len(to_delete))

        await report(progress, "optimizing", 0, 1)
        await self._store.optimize()
        await report(progress, "optimizing", 1, 1)

        wrote = counts.files_indexed > 0 or bool(to_delete)
        if wrote or existing is None or existing.embedding_model != model:
            await self._store.save_repository(
                Repository(
                    id=run.repo_id,
                    name=repo_name,
                    path=root,
                    embedding_model=model,
                    embedding_dimension=dimension,
                    indexed_at=run.began,
                )
            )
        after = await self._store.get_repository(run.repo_id)
        await report(progress, "done", total, total)
        return IndexResult(
            repository_id=run.repo_id,
            repository_name=repo_name,
            files_indexed=counts.files_indexed,
            files_unchanged=changes.unchanged,
            files_deleted=len(changes.removed),
            chunks_created=counts.chunks_created,
            chunks_embedded=counts.embedded,
            embeddings_cached=counts.cached,
            vectors_missing=after.vectors_missing,
            duration_seconds=round(time.perf_counter() - run.started, 3),
            status=decisions.run_status(
                failed_files=len(errors),
                files_indexed=counts.files_indexed,
                unchanged=changes.unchanged,
                to_index=total,
            ),
            errors=errors,
            files_skipped=dict(Counter(s.reason.value for s in scan.skipped)),
            skipped=scan.skipped,
        )

    async def vectors_missing(self, request: IndexRequest) -> int:
        """Chunks of the repository at ``request.root`` still without a vector (0 without an
        embedder, or for a repository never indexed)."""
        if self._embedder is None:
            return 0
        repository = await self._store.find_repository(request.root)
        return repository.vectors_missing if repository is not None else 0

    async def build_vectors(
        self,
        request: IndexRequest,
        *,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
        counts: RunCounts | None = None,
    ) -> VectorResult:
        """Embed the chunks of the repository at ``request.root`` still without a vector (see
        ``services.indexing.vectors``); nothing to do without an embedder. Raises
        ``RepositoryNotFound`` for a repository never indexed, ``EmbedderUnavailable`` when
        the model fails (the vectors stored so far stay), ``Cancelled`` when ``cancel`` is
        set, ``RepositoryBusy`` when another run builds this repository's vectors and
        ``wait`` is False."""
        repository = await self._store.find_repository(request.root)
        if repository is None:
            raise RepositoryNotFound(f"no repository is indexed at {request.root}")
        run_counts = counts if counts is not None else RunCounts()
        if self._embedder is None or repository.vectors_missing == 0:
            return VectorResult(
                repository_id=repository.id,
                repository_name=repository.name,
                chunks_embedded=0,
                embeddings_cached=0,
                vectors_missing=repository.vectors_missing,
                duration_seconds=0.0,
            )
        async with self._store.vectors_lock(repository.id, wait=wait):
            # What is missing now: another run may have built it while this one waited.
            repository = await self._store.get_repository(repository.id)
            return await build_vectors(
                VectorRun(self._store, self._embedder, self._vector_batch),
                repository,
                progress=progress,
                cancel=cancel or CancellationToken(),
                counts=run_counts,
            )


async def _discard(work: asyncio.Future[ScanResult]) -> None:
    """Drop work no longer wanted: cancelled if still running and waited for (a run ends only
    once its scan has stopped reading), its failure marked as seen."""
    if not work.done():
        work.cancel()
        await asyncio.wait([work])
    if not work.cancelled():
        work.exception()
