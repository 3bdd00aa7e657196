"""IndexingService: brings a repository's index up to date with its files, incrementally."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import inspect
import multiprocessing
import multiprocessing.context
import sys
import threading
import time
import types
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath
from typing import Any

from codebase_core.errors import (
    Cancelled,
    CoreError,
    EmbedderUnavailable,
    FileUnreadable,
    ModelMismatch,
    RepositoryBusy,
    ValidationFailed,
)
from codebase_core.models import (
    Chunk,
    FileError,
    IndexResult,
    IndexStatus,
    ProgressPhase,
    Repository,
    ScanEntry,
    ScanResult,
    SourceFile,
    chunk_id_for,
    repository_id_for,
    sha256_hex,
    utcnow,
)
from codebase_core.ports import Chunker, ChunkStore, Embedder, SourceTree, TokenCounter

ProgressCallback = Callable[[ProgressPhase, int, int], Awaitable[None] | None]

# Batch writes in flight at once: the store prepares one (COPY data, in a thread) while the
# database takes the other. Two keep both busy; more would only hold more batches in memory.
WRITE_DEPTH = 2


class CancellationToken:
    """Set by a caller to ask long work to stop at its next safe point."""

    def __init__(self) -> None:
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise Cancelled("indexing was cancelled; files written so far are consistent")


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A file ready to store: its snapshot text, chunks and (optionally) one vector per chunk."""

    file: SourceFile
    text: str
    chunks: Sequence[Chunk]
    vectors: Sequence[Sequence[float]] | None


class IndexingService:
    """Scans a repository, diffs by content hash, chunks, embeds and writes what changed.

    Chunking is CPU-bound Python (tree-sitter and tiktoken hold the GIL): with ``workers`` > 1
    and at least ``pool_min_files`` changed files, batches are chunked in that many worker
    processes (the chunker and token counter must then be picklable), else in one thread.
    """

    def __init__(
        self,
        store: ChunkStore,
        source: SourceTree,
        chunker: Chunker,
        tokens: TokenCounter,
        embedder: Embedder | None,
        batch_files: int = 64,
        workers: int = 1,
        pool_min_files: int = 1000,
    ) -> None:
        if batch_files < 1 or workers < 1 or pool_min_files < 0:
            raise ValueError("batch_files and workers must be >= 1, pool_min_files >= 0")
        self._store = store
        self._source = source
        self._chunker = chunker
        self._tokens = tokens
        self._embedder = embedder
        self._batch_files = batch_files
        self._workers = workers
        self._pool_min_files = pool_min_files

    async def index(
        self,
        root: str,
        *,
        name: str | None = None,
        force: bool = False,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        wait: bool = True,
    ) -> IndexResult:
        """Index the repository at the absolute path ``root``.

        Unchanged files (same sha256) are neither read past hashing, nor chunked nor embedded;
        ``force`` re-chunks every file but still reuses cached embeddings. Removed files lose
        their chunks. Per-file failures are reported in ``errors`` (status ``partial``).
        Raises ``ValidationFailed`` for a bad root, ``ModelMismatch`` when the repository was
        indexed with another embedding model and ``force`` is not set, ``Cancelled`` when
        ``cancel`` is set (every file already written stays consistent), ``RepositoryBusy``
        when another process indexes the same repository and ``wait`` is False (with ``wait``,
        progress reports phase ``waiting`` and the run starts when the other ends).
        """
        started = time.perf_counter()
        if not PurePath(root).is_absolute():
            raise ValidationFailed("repo_path", root, "must be an absolute path")
        token = cancel or CancellationToken()
        repo_id = repository_id_for(root)
        # The scan needs no database: it runs while the lock is taken, which may first start
        # the embedded server. indexed_at is when the run's snapshot began: a file modified
        # after it may be newer than what the run read (search marks such hits stale after
        # checking their hash).
        began = utcnow()
        scan = asyncio.ensure_future(self._source.scan(root))
        # So does chunking, of the first files scanned, until the lock is held; files that
        # turn out unchanged are dropped then.
        early = _EarlyChunking(self, root, repo_id, scan)
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
                    await _report(progress, "waiting", 0, 1)
                    await stack.enter_async_context(self._store.indexing_lock(repo_id, wait=True))
                    _discard(scan)
                    began = utcnow()
                    scan = asyncio.ensure_future(self._source.scan(root))
                return await self._index_locked(
                    root, repo_id, name, force, progress, token, started, began, scan, early
                )
        finally:
            await early.close()
            _discard(scan)
        raise AssertionError("unreachable")  # pragma: no cover (mypy: AsyncExitStack may swallow)

    async def _index_locked(
        self,
        root: str,
        repo_id: str,
        name: str | None,
        force: bool,
        progress: ProgressCallback | None,
        token: CancellationToken,
        started: float,
        began: datetime,
        scanning: asyncio.Future[ScanResult],
        early: _EarlyChunking,
    ) -> IndexResult:
        await _report(progress, "scanning", 0, 1)
        scan = await scanning
        await _report(progress, "scanning", 1, 1)
        token.raise_if_cancelled()

        existing = await self._store.find_repository(root)
        model = self._embedder.model if self._embedder is not None else None
        dimension = self._embedder.dimension if self._embedder is not None else None
        # A lexical-only repository gaining an embedder has no vectors to mix up: every file
        # is re-chunked and embedded, as with force (say, after installing the local extra).
        if existing is not None and existing.embedding_model is None and model is not None:
            force = True
        if (
            existing is not None
            and existing.chunk_count
            and not force
            and existing.embedding_model != model
        ):
            raise ModelMismatch(
                f"repository {existing.name!r} was indexed with "
                f"{existing.embedding_model or 'no embedder'}, the configured embedder is "
                f"{model or 'none'}: re-index with force_reindex "
                f"(CLI: codebase-mcp index {root} --force) to replace its vectors",
                repository_id=existing.id,
            )
        repo_name = name or (existing.name if existing else PurePath(root).name or root)
        if existing is None or existing.name != repo_name or existing.embedding_model != model:
            # Register first so that files written below always belong to a known repository.
            # With the model from the start: a run that fails midway leaves vectors of it, and
            # a forced model change switches the store before any new vector is written.
            base = existing or Repository(id=repo_id, name=repo_name, path=root)
            await self._store.save_repository(
                base.model_copy(
                    update={
                        "name": repo_name,
                        "embedding_model": model,
                        "embedding_dimension": dimension,
                    }
                )
            )
        stored = await self._store.file_hashes(repo_id)
        scanned = {e.path: e for e in scan.files}
        changed = [e for e in scan.files if force or stored.get(e.path) != e.content_hash]
        removed = sorted(set(stored) - set(scanned))
        errors: list[FileError] = list(scan.errors)

        chunks_created = embedded = cached = truncated = files_indexed = 0
        total = len(changed)
        await _report(progress, "chunking", 0, total)
        # Work units of (files to count, batch to prepare or its preparation under way).
        units: collections.deque[tuple[int, Sequence[ScanEntry] | _Preparing]]
        units, rest = early.take(changed)
        units.extend(
            (len(b), b)
            for b in (
                rest[i : i + self._batch_files] for i in range(0, len(rest), self._batch_files)
            )
        )
        pool: ProcessPoolExecutor | None = None
        done = 0

        async def write(prepared: list[PreparedFile], n_files: int) -> None:
            nonlocal files_indexed, chunks_created, done
            await self._store.replace_files(repo_id, prepared)
            files_indexed += len(prepared)
            chunks_created += sum(len(p.chunks) for p in prepared)
            done += n_files
            await _report(progress, "writing", done, total)

        # Pipeline: while batch N is embedded, the next ones are read and chunked (in worker
        # processes, or one worker thread) and earlier batches are written, so that a real
        # embedder is never idle waiting for chunking or the database. Up to ``WRITE_DEPTH``
        # writes are in flight (the store prepares one while the database takes the other);
        # batches hold disjoint files, so their order does not matter.
        ahead: collections.deque[tuple[int, _Preparing]] = collections.deque()
        writing: collections.deque[asyncio.Task[None]] = collections.deque()
        try:
            if self._workers > 1 and len(rest) >= max(self._pool_min_files, 2 * self._batch_files):
                pool = _chunking_pool(self._workers, self._chunker, self._tokens)
            depth = self._workers + 1 if pool is not None else 1
            while units or ahead:
                token.raise_if_cancelled()
                while units and len(ahead) < depth:
                    n, work = units.popleft()
                    if not isinstance(work, asyncio.Task):
                        work = asyncio.create_task(self._prepare(root, repo_id, work, pool))
                    ahead.append((n, work))
                n_files, preparing = ahead.popleft()
                prepared, batch_errors = await preparing
                errors.extend(batch_errors)
                n_embedded, n_cached, n_truncated = await self._embed(prepared)
                embedded += n_embedded
                cached += n_cached
                truncated += n_truncated
                token.raise_if_cancelled()
                while len(writing) >= WRITE_DEPTH:
                    # Shielded: cancelling the run does not cancel a write it has started.
                    await asyncio.shield(writing.popleft())
                writing.append(asyncio.create_task(write(prepared, n_files)))
            while writing:
                await asyncio.shield(writing.popleft())
        finally:
            try:
                started_work = [t for _, t in ahead] + [
                    t for _, t in units if isinstance(t, asyncio.Task)
                ]
                for task in started_work:
                    task.cancel()
                for task in started_work:
                    with contextlib.suppress(asyncio.CancelledError, CoreError):
                        await task
                # Writes already started complete (each is one transaction); their own
                # failure, if any, was raised above or gives way to what stopped the run.
                for in_flight in writing:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(in_flight)
            finally:
                if pool is not None:
                    # Queued batches are dropped; one a worker has started finishes first.
                    await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

        # A file that changed but could no longer be read keeps no stale chunks.
        unreadable = [e.path for e in errors if e.path in stored and e.path in scanned]
        to_delete = removed + [p for p in unreadable if p not in removed]
        if to_delete:
            await _report(progress, "deleting", 0, len(to_delete))
            await self._store.delete_files(repo_id, to_delete)
            await _report(progress, "deleting", len(to_delete), len(to_delete))

        await _report(progress, "optimizing", 0, 1)
        await self._store.optimize()
        await _report(progress, "optimizing", 1, 1)

        wrote = files_indexed > 0 or bool(to_delete)
        if wrote or existing is None or existing.embedding_model != model:
            await self._store.save_repository(
                Repository(
                    id=repo_id,
                    name=repo_name,
                    path=root,
                    embedding_model=model,
                    embedding_dimension=dimension,
                    indexed_at=began,
                )
            )
        await _report(progress, "done", total, total)
        # Failed: files had to be indexed and none of the repository's files is now in the
        # index (neither written by this run nor unchanged since the last one).
        unchanged = len(scan.files) - total
        if errors and files_indexed == 0 and unchanged == 0 and total > 0:
            status = IndexStatus.FAILED
        elif errors:
            status = IndexStatus.PARTIAL
        else:
            status = IndexStatus.SUCCESS
        return IndexResult(
            repository_id=repo_id,
            repository_name=repo_name,
            files_indexed=files_indexed,
            files_unchanged=len(scan.files) - total,
            files_deleted=len(removed),
            chunks_created=chunks_created,
            chunks_embedded=embedded,
            embeddings_cached=cached,
            chunks_truncated=truncated,
            duration_seconds=round(time.perf_counter() - started, 3),
            status=status,
            errors=errors,
        )

    async def _prepare(
        self, root: str, repo_id: str, batch: Sequence[ScanEntry], pool: Executor | None
    ) -> tuple[list[PreparedFile], list[FileError]]:
        texts: list[tuple[ScanEntry, str]] = []
        errors: list[FileError] = []
        read = await self._source.read_texts(root, [entry.path for entry in batch])
        for entry, text in zip(batch, read, strict=True):
            if isinstance(text, FileUnreadable):
                errors.append(FileError(path=entry.path, error=text.message))
            else:
                texts.append((entry, text))
        # Chunking and token counting are CPU work: keep them off the event loop.
        if pool is not None:
            try:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(pool, _chunk_in_worker, repo_id, texts), errors
            except BrokenProcessPool:
                pass  # a worker died (killed, out of memory): chunk here instead
        prepared = await asyncio.to_thread(chunk_files, self._chunker, self._tokens, repo_id, texts)
        return prepared, errors

    async def _embed(self, prepared: list[PreparedFile]) -> tuple[int, int, int]:
        """Attach vectors, embedding only chunk texts the cache lacks.

        Returns (newly embedded, taken from the cache, truncated to fit the model)."""
        if self._embedder is None:
            return 0, 0, 0
        model = self._embedder.model
        texts_by_hash: dict[str, str] = {}
        for p in prepared:
            for c in p.chunks:
                texts_by_hash.setdefault(c.content_hash, c.content)
        if not texts_by_hash:
            return 0, 0, 0
        known: dict[str, Sequence[float]] = dict(
            await self._store.cached_embeddings(model, list(texts_by_hash))
        )
        missing = [h for h in texts_by_hash if h not in known]
        truncated = 0
        if missing:
            result = await self._embedder.embed_documents([texts_by_hash[h] for h in missing])
            if len(result.vectors) != len(missing):
                raise EmbedderUnavailable(
                    f"embedder {model} returned {len(result.vectors)} vectors for "
                    f"{len(missing)} texts"
                )
            truncated = result.truncated
            # No cache_embeddings here: replace_files makes the vectors it stores available to
            # cached_embeddings (see ChunkStore), so a large first index writes them once.
            known.update(zip(missing, result.vectors, strict=True))
        for i, p in enumerate(prepared):
            prepared[i] = dataclasses.replace(p, vectors=[known[c.content_hash] for c in p.chunks])
        return len(missing), len(texts_by_hash) - len(missing), truncated


_Preparing = asyncio.Task[tuple[list[PreparedFile], list[FileError]]]

# At most this many files are chunked before the run knows which files changed.
EARLY_FILES = 4096


class _EarlyChunking:
    """Chunking of the first scanned files while the indexing lock is being taken: the store
    may be starting its server first (a fresh embedded one takes over a second, on one core),
    and which files changed is only known once it answers. Batches are prepared in scan order,
    one at a time in a thread (worker processes would be started for nothing when no file
    changed), until ``stop``; ``take`` then keeps what the changed files need and drops the
    rest."""

    def __init__(
        self,
        service: IndexingService,
        root: str,
        repo_id: str,
        scan: asyncio.Future[ScanResult],
    ) -> None:
        self._service, self._root, self._repo_id, self._scan = service, root, repo_id, scan
        self._batches: list[tuple[Sequence[ScanEntry], _Preparing]] = []
        self._dropped: list[_Preparing] = []
        self._stopping = asyncio.Event()
        self._runner = asyncio.create_task(self._run())

    async def _run(self) -> None:
        scan = self._scan
        stopping: asyncio.Future[Any] = asyncio.create_task(self._stopping.wait())
        try:
            first: list[asyncio.Future[Any]] = [scan, stopping]
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if self._stopping.is_set() or scan.cancelled() or scan.exception() is not None:
                return
            files = scan.result().files[:EARLY_FILES]
            size = self._service._batch_files
            for i in range(0, len(files), size):
                batch = files[i : i + size]
                task = asyncio.create_task(
                    self._service._prepare(self._root, self._repo_id, batch, None)
                )
                self._batches.append((batch, task))
                await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
                if self._stopping.is_set():
                    return
        finally:
            stopping.cancel()

    async def stop(self) -> None:
        """Start no more batches (the one under way goes on)."""
        self._stopping.set()
        await _settled([self._runner])

    def take(
        self, changed: Sequence[ScanEntry]
    ) -> tuple[collections.deque[tuple[int, Sequence[ScanEntry] | _Preparing]], list[ScanEntry]]:
        """Units of (files kept, preparation) covering the changed files prepared early, in scan
        order, and the changed files left to prepare. Batches with no changed file stop."""
        wanted = {e.path for e in changed}
        units: collections.deque[tuple[int, Sequence[ScanEntry] | _Preparing]]
        units = collections.deque()
        covered: set[str] = set()
        for batch, task in self._batches:
            keep = {e.path for e in batch if e.path in wanted}
            covered.update(keep)
            if not keep:
                task.cancel()
                self._dropped.append(task)
            elif len(keep) == len(batch):
                units.append((len(keep), task))
            else:
                units.append((len(keep), asyncio.create_task(_only(task, keep))))
        self._batches = []
        return units, [e for e in changed if e.path not in covered]

    async def close(self) -> None:
        """Cancel what was not taken and wait for it (idempotent)."""
        pending = [self._runner, *self._dropped, *(t for _, t in self._batches)]
        for task in pending:
            task.cancel()
        self._batches, self._dropped = [], []
        await _settled(pending)


async def _settled(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait for tasks to end, their failures (or cancellation) seen and dropped; a cancel of
    the caller itself still raises (``suppress`` around an ``await`` would swallow it)."""
    if tasks:
        await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled():
            task.exception()


async def _only(
    preparing: _Preparing, paths: set[str]
) -> tuple[list[PreparedFile], list[FileError]]:
    """An early batch's preparation, reduced to the files that changed."""
    prepared, errors = await preparing
    return [p for p in prepared if p.file.path in paths], [e for e in errors if e.path in paths]


def chunk_files(
    chunker: Chunker, tokens: TokenCounter, repo_id: str, texts: Sequence[tuple[ScanEntry, str]]
) -> list[PreparedFile]:
    """Chunks of each (entry, text), with ids, hashes and token counts (no vectors yet)."""
    out: list[PreparedFile] = []
    for entry, text in texts:
        chunks = []
        for d in chunker.chunk(entry.path, text, entry.language):
            h = sha256_hex(d.content)
            chunks.append(
                Chunk(
                    id=chunk_id_for(repo_id, entry.path, d.start_line, d.end_line, h),
                    repository_id=repo_id,
                    file_path=entry.path,
                    language=entry.language,
                    symbol=d.symbol,
                    kind=d.kind,
                    start_line=d.start_line,
                    end_line=d.end_line,
                    content=d.content,
                    content_hash=h,
                    token_count=(
                        d.token_count if d.token_count is not None else tokens.count(d.content)
                    ),
                )
            )
        source = SourceFile(
            path=entry.path,
            language=entry.language,
            content_hash=entry.content_hash,
            size=entry.size,
        )
        out.append(PreparedFile(file=source, text=text, chunks=chunks, vectors=None))
    return out


# The chunker and token counter of a worker process, set once by the pool's initializer.
_worker_parts: tuple[Chunker, TokenCounter] | None = None


def _init_worker(chunker: Chunker, tokens: TokenCounter) -> None:
    global _worker_parts
    _worker_parts = (chunker, tokens)


def _chunk_in_worker(repo_id: str, texts: Sequence[tuple[ScanEntry, str]]) -> list[PreparedFile]:
    assert _worker_parts is not None, "worker process started without _init_worker"
    return chunk_files(*_worker_parts, repo_id, texts)


def _ready() -> None:
    """A first task for each worker: makes the pool start its processes."""


# A spawned process first imports the parent's __main__ (the CLI, a bench script, pytest: all of
# the application and its server stack, about 0.4 s of CPU a worker) for a job that needs none
# of it. The parent's preparation data names __main__ only while the process is launched: a
# blank module stands in for those milliseconds, under a lock (pools created by two threads).
_BLANK_MAIN = types.ModuleType("__main__")
_LAUNCHING = threading.Lock()


class _WorkerProcess(multiprocessing.context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _LAUNCHING:
            main = sys.modules["__main__"]
            sys.modules["__main__"] = _BLANK_MAIN
            try:
                return multiprocessing.context.SpawnProcess._Popen(process_obj)
            finally:
                sys.modules["__main__"] = main


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _WorkerProcess


def _chunking_pool(workers: int, chunker: Chunker, tokens: TokenCounter) -> ProcessPoolExecutor:
    # spawn: a forked copy of a process running an event loop, threads and database
    # connections is not safe.
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_WorkerContext(),
        initializer=_init_worker,
        initargs=(chunker, tokens),
    )
    # The pool starts a process per submit while it has no idle one: start them all now, so
    # their imports overlap the reading of the first batches.
    try:
        for _ in range(workers):
            pool.submit(_ready)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    return pool


def _discard(work: asyncio.Future[ScanResult]) -> None:
    """Drop work no longer wanted: cancelled if still running, its failure marked as seen."""
    if not work.done():
        work.cancel()
    elif not work.cancelled():
        work.exception()


async def _report(
    callback: ProgressCallback | None, phase: ProgressPhase, done: int, total: int
) -> None:
    if callback is None:
        return
    outcome = callback(phase, done, total)
    if inspect.isawaitable(outcome):
        await outcome
