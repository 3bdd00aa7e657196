"""IndexingService: incremental indexing, the embedding cache, errors, progress, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemorySourceTree
from adapters.tokens import TiktokenCounter
from adapters.treesitter import TreeSitterChunker
from codebase_core.errors import Cancelled, EmbedderUnavailable, ModelMismatch, ValidationFailed
from codebase_core.models import Embeddings, IndexStatus
from codebase_core.services import CancellationToken, IndexingService, indexing

ROOT = "/repo"
TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)

FILES = {
    "app/auth.py": "import hashlib\n\n\ndef hash_password(pw):\n    return hashlib.sha256(pw.encode()).hexdigest()\n\n\ndef check_password(pw, digest):\n    return hash_password(pw) == digest\n",
    "app/server.go": 'package main\n\nfunc main() {\n\tprintln("hi")\n}\n',
    "README.md": "# Demo\n\nA tiny repository.\n",
}


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that counts what it was asked to embed."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.embedded: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        self.embedded.extend(texts)
        return await super().embed_documents(texts)


class CountingStore(InMemoryChunkStore):
    """An in-memory store that counts writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.writes += len(files)
        await super().replace_files(repository_id, files)

    async def delete_files(self, repository_id, paths):  # type: ignore[no-untyped-def]
        self.writes += len(paths)
        return await super().delete_files(repository_id, paths)


def _service(
    tree: InMemorySourceTree, store: InMemoryChunkStore, embedder: HashingEmbedder | None
) -> IndexingService:
    return IndexingService(store, tree, CHUNKER, TOKENS, embedder, batch_files=2)


async def test_first_index_then_unchanged_reindex_does_nothing() -> None:
    tree, store, emb = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        CountingStore(),
        CountingEmbedder(),
    )
    service = _service(tree, store, emb)
    first = await service.index(ROOT)
    assert first.status is IndexStatus.SUCCESS
    assert (first.files_indexed, first.files_unchanged, first.files_deleted) == (3, 0, 0)
    assert first.chunks_created == len(await store.chunks(first.repository_id)) > 3
    assert first.chunks_embedded == len(emb.embedded)
    writes, embedded = store.writes, len(emb.embedded)
    again = await service.index(ROOT)
    assert (again.files_indexed, again.files_unchanged, again.chunks_embedded) == (0, 3, 0)
    assert store.writes == writes and len(emb.embedded) == embedded


async def test_edit_reembeds_only_changed_chunks_and_force_embeds_nothing() -> None:
    tree, store, emb = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        CountingStore(),
        CountingEmbedder(),
    )
    service = _service(tree, store, emb)
    await service.index(ROOT)
    emb.embedded.clear()
    edited = FILES["app/auth.py"].replace(
        "return hash_password(pw) == digest",
        "return hmac.compare_digest(hash_password(pw), digest)",
    )
    tree.put(ROOT, "app/auth.py", edited)
    result = await service.index(ROOT)
    assert result.files_indexed == 1 and result.files_unchanged == 2
    assert emb.embedded and all(
        "hash_password(pw):\n    return hashlib" not in t for t in emb.embedded
    )
    assert any("compare_digest" in t for t in emb.embedded)
    emb.embedded.clear()
    forced = await service.index(ROOT, force=True)
    assert forced.files_indexed == 3 and forced.chunks_embedded == 0 and emb.embedded == []
    assert forced.embeddings_cached == forced.chunks_created or forced.embeddings_cached > 0


async def test_deleted_files_lose_their_chunks() -> None:
    tree, store = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        InMemoryChunkStore(),
    )
    service = _service(tree, store, None)
    first = await service.index(ROOT)
    tree.remove(ROOT, "app/server.go")
    result = await service.index(ROOT)
    assert result.files_deleted == 1
    assert {c.file_path for c in await store.chunks(first.repository_id)} == {
        "app/auth.py",
        "README.md",
    }
    repo = await store.get_repository(first.repository_id)
    assert repo.file_count == 2


async def test_undecodable_file_is_a_per_file_error() -> None:
    tree = InMemorySourceTree({ROOT: {"ok.py": b"x = 1\n", "bad.py": b"\xff\xfe\x00garbage"}})
    store = InMemoryChunkStore()
    result = await _service(tree, store, None).index(ROOT)
    assert result.status is IndexStatus.PARTIAL
    assert [e.path for e in result.errors] == ["bad.py"]
    assert {c.file_path for c in await store.chunks(result.repository_id)} == {"ok.py"}


async def test_unchanged_reindex_beside_an_undecodable_file_is_partial_not_failed() -> None:
    tree = InMemorySourceTree({ROOT: {"ok.py": b"x = 1\n", "bad.py": b"\xff\xfe\x00garbage"}})
    store = InMemoryChunkStore()
    service = _service(tree, store, None)
    await service.index(ROOT)
    again = await service.index(ROOT)
    # ok.py is indexed and up to date: the repository is searchable, only bad.py is missing.
    assert again.files_indexed == 0 and [e.path for e in again.errors] == ["bad.py"]
    assert again.status is IndexStatus.PARTIAL


async def test_file_that_becomes_unreadable_keeps_no_stale_chunks() -> None:
    tree, store = InMemorySourceTree({ROOT: {"a.py": b"x = 1\n"}}), InMemoryChunkStore()
    service = _service(tree, store, None)
    first = await service.index(ROOT)
    tree.put(ROOT, "a.py", b"\xff\xfe bad")
    result = await service.index(ROOT)
    assert result.status is IndexStatus.FAILED
    assert await store.chunks(first.repository_id) == []


async def test_model_change_requires_force() -> None:
    tree, store = (
        InMemorySourceTree({ROOT: {"a.py": b"def f():\n    return 1\n"}}),
        InMemoryChunkStore(),
    )
    await _service(tree, store, HashingEmbedder(64)).index(ROOT)
    with pytest.raises(ModelMismatch, match="--force"):
        await _service(tree, store, HashingEmbedder(128)).index(ROOT)
    result = await _service(tree, store, HashingEmbedder(128)).index(ROOT, force=True)
    repo = await store.get_repository(result.repository_id)
    assert repo.embedding_model == "hash-128" and result.chunks_embedded == 1


async def test_a_lexical_only_repository_gains_vectors_without_force() -> None:
    files = {"a.py": b"def f():\n    return 1\n", "b.py": b"def g():\n    return 2\n"}
    tree, store = InMemorySourceTree({ROOT: files}), InMemoryChunkStore()
    await _service(tree, store, None).index(ROOT)
    result = await _service(tree, store, HashingEmbedder(64)).index(ROOT)
    assert result.files_indexed == 2 and result.chunks_embedded == 2
    repo = await store.get_repository(result.repository_id)
    assert repo.embedding_model == "hash-64"
    # The other way would lose vectors: that still needs force.
    with pytest.raises(ModelMismatch, match="--force"):
        await _service(tree, store, None).index(ROOT)


async def test_relative_root_is_rejected() -> None:
    with pytest.raises(ValidationFailed, match="absolute"):
        await _service(InMemorySourceTree(), InMemoryChunkStore(), None).index("repo")


async def test_progress_is_reported_in_order() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(5)}
    events: list[tuple[str, int, int]] = []

    async def progress(phase: str, done: int, total: int) -> None:
        events.append((phase, done, total))

    await _service(InMemorySourceTree({ROOT: files}), InMemoryChunkStore(), None).index(
        ROOT, progress=progress
    )
    assert events[0] == ("scanning", 0, 1) and events[-1] == ("done", 5, 5)
    writing = [e for e in events if e[0] == "writing"]
    assert [d for _, d, _ in writing] == [2, 4, 5]


async def test_cancellation_stops_between_batches_and_leaves_whole_files() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(6)}
    store = InMemoryChunkStore()
    token = CancellationToken()

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "writing" and done >= 2:
            token.cancel()

    service = _service(InMemorySourceTree({ROOT: files}), store, None)
    with pytest.raises(Cancelled):
        await service.index(ROOT, progress=progress, cancel=token)
    repo = await store.find_repository(ROOT)
    assert repo is not None
    hashes = await store.file_hashes(repo.id)
    assert sorted(hashes) == ["m0.py", "m1.py"]
    # Resuming finishes the job and converges.
    done = await service.index(ROOT)
    assert done.files_indexed == 4 and done.files_unchanged == 2


# --- property: incremental indexing converges to a fresh index -----------------------------

_snippets = st.sampled_from(
    [
        "def alpha(x):\n    return x + 1\n",
        "class Beta:\n    def run(self):\n        return 'beta'\n",
        "import os\nPATH = os.getcwd()\n",
        "# Notes\n\nSome *markdown* text.\n",
        "func gamma() int {\n\treturn 3\n}\n",
        "",
    ]
)
_names = st.sampled_from(["a.py", "b.py", "pkg/c.py", "README.md", "main.go", "pkg/d.py"])
_trees = st.dictionaries(_names, st.lists(_snippets, max_size=3).map("\n".join), max_size=5)


def _state(chunks: list) -> list[tuple]:  # type: ignore[type-arg]
    return [(c.id, c.file_path, c.start_line, c.end_line, c.content_hash, c.symbol) for c in chunks]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_trees, after=_trees)
async def test_incremental_reindex_equals_fresh_index(
    before: dict[str, str], after: dict[str, str]
) -> None:
    tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in before.items()}})
    store = InMemoryChunkStore()
    emb = CountingEmbedder()
    service = _service(tree, store, emb)
    await service.index(ROOT)
    for path in before:
        tree.remove(ROOT, path)
    for path, text in after.items():
        tree.put(ROOT, path, text)
    result = await service.index(ROOT)

    fresh_store = InMemoryChunkStore()
    fresh = await _service(
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in after.items()}}),
        fresh_store,
        CountingEmbedder(),
    ).index(ROOT)
    assert _state(await store.chunks(result.repository_id)) == _state(
        await fresh_store.chunks(fresh.repository_id)
    )
    assert await store.file_hashes(result.repository_id) == await fresh_store.file_hashes(
        fresh.repository_id
    )

    # And a third run over the unchanged tree writes and embeds nothing.
    embedded = len(emb.embedded)
    third = await service.index(ROOT)
    assert third.files_indexed == 0 and third.files_deleted == 0 and len(emb.embedded) == embedded


class FailingEmbedder(HashingEmbedder):
    """Fails on its second call, like a server that goes down mid-run."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls = 0

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        self.calls += 1
        if self.calls == 2:
            raise EmbedderUnavailable("embedding server at http://127.0.0.1:9 went away")
        return await super().embed_documents(texts)


async def test_embedder_failure_mid_run_keeps_whole_files_and_resumes() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(6)}
    store = InMemoryChunkStore()
    tree = InMemorySourceTree({ROOT: files})
    with pytest.raises(EmbedderUnavailable):
        await _service(tree, store, FailingEmbedder()).index(ROOT)
    repo = await store.find_repository(ROOT)
    assert repo is not None
    assert sorted(await store.file_hashes(repo.id)) == ["m0.py", "m1.py"]
    resumed = await _service(tree, store, CountingEmbedder(64)).index(ROOT)
    assert resumed.files_indexed == 4 and resumed.status is IndexStatus.SUCCESS


def test_chunker_and_token_counter_survive_pickling() -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(CHUNKER))
    text = FILES["app/auth.py"]
    assert copy.chunk("app/auth.py", text, "python") == CHUNKER.chunk("app/auth.py", text, "python")
    assert pickle.loads(pickle.dumps(TOKENS)).count(text) == TOKENS.count(text)


async def test_worker_processes_chunk_exactly_as_one_thread_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 40 files in batches of 2 over 2 spawned worker processes (pool_min_files=0 forces the
    # pool); the index must equal the one built in-process, chunk for chunk and vector for vector.
    files = {
        f"pkg/m{i}.py": f"def f{i}(x):\n    return x * {i}\n\n\nclass C{i}:\n    def m(self):\n"
        f"        return {i}\n"
        for i in range(40)
    }
    indexes = []
    for workers in (1, 2):
        tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in files.items()}})
        store = InMemoryChunkStore()
        service = IndexingService(
            store,
            tree,
            CHUNKER,
            TOKENS,
            HashingEmbedder(64),
            batch_files=2,
            workers=workers,
            pool_min_files=0,
        )
        if workers == 2:  # spawned workers import the real one: no chunking in this process
            monkeypatch.setattr(indexing, "chunk_files", _fail)
        result = await service.index(ROOT)
        assert result.status is IndexStatus.SUCCESS and result.files_indexed == 40
        chunks = await store.chunks(result.repository_id)
        vectors = await store.cached_embeddings("hash-64", [c.content_hash for c in chunks])
        indexes.append(
            (sorted(c.model_dump_json() for c in chunks), {h: list(v) for h, v in vectors.items()})
        )
    assert indexes[0] == indexes[1] and len(indexes[0][0]) >= 80


def _fail(*args: object) -> NoReturn:
    raise AssertionError("chunked in the main process")


def _imported_the_parents_main() -> bool:
    # spawn's prepare() runs the parent's main module (by path or by name) as __mp_main__; a
    # worker's own __main__ (python -c) has neither a file nor a spec.
    main = sys.modules["__mp_main__"]
    return getattr(main, "__file__", None) is not None or main.__spec__ is not None


def test_chunking_workers_do_not_import_the_parents_main_module() -> None:
    # Here __main__ is pytest's runner: a worker importing it pays for the whole application.
    pool = indexing._chunking_pool(2, CHUNKER, TOKENS)
    try:
        assert [pool.submit(_imported_the_parents_main).result() for _ in range(4)] == [False] * 4
        assert sys.modules["__main__"].__dict__.get("__file__")  # given back to this process
    finally:
        pool.shutdown()


class _GatedStore(InMemoryChunkStore):
    """Holds each write until the embedder has started on the next batch (or the run ends)."""

    def __init__(self, next_embedding: asyncio.Event) -> None:
        super().__init__()
        self._next = next_embedding
        self.overlapped = 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self._next.clear()
        try:
            await asyncio.wait_for(self._next.wait(), timeout=1.0)
            self.overlapped += 1
        except TimeoutError:
            pass  # the last batch: nothing follows it
        await super().replace_files(repository_id, files)


class _SignallingEmbedder(HashingEmbedder):
    def __init__(self, started: asyncio.Event) -> None:
        super().__init__(64)
        self._started = started

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        self._started.set()
        return await super().embed_documents(texts)


async def test_the_next_batch_is_embedded_while_the_last_one_is_written() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(8)}
    started = asyncio.Event()
    store = _GatedStore(started)
    service = IndexingService(
        store,
        InMemorySourceTree({ROOT: files}),
        CHUNKER,
        TOKENS,
        _SignallingEmbedder(started),
        batch_files=2,
    )
    result = await service.index(ROOT)
    # 4 batches: each of the first 3 writes saw the next batch's embedding begin.
    assert result.files_indexed == 8
    assert store.overlapped == 3
    assert len(await store.chunks(result.repository_id)) == 8


class _TruncatingEmbedder(HashingEmbedder):
    """Reports texts over 40 characters as truncated, as a model with a short context would."""

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        vectors = (await super().embed_documents(texts)).vectors
        return Embeddings(vectors=vectors, truncated=sum(len(t) > 40 for t in texts))


async def test_truncated_chunks_are_counted_in_the_result() -> None:
    files = {
        "short.py": b"def f():\n    return 1\n",
        "long.py": ("def g():\n" + "    x = compute_something(x)\n" * 5).encode(),
    }
    service = IndexingService(
        InMemoryChunkStore(),
        InMemorySourceTree({ROOT: files}),
        CHUNKER,
        TOKENS,
        _TruncatingEmbedder(64),
    )
    result = await service.index(ROOT)
    assert result.chunks_embedded == 2 and result.chunks_truncated == 1


class _HeldStore(InMemoryChunkStore):
    """Each write waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()
        self.release = asyncio.Event()

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.writing.set()
        await self.release.wait()
        await super().replace_files(repository_id, files)


def _numbered(store: InMemoryChunkStore, n_files: int, batch_files: int) -> IndexingService:
    """A service over ``n_files`` one-function files, written in batches of ``batch_files``."""
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(n_files)}
    return IndexingService(
        store,
        InMemorySourceTree({ROOT: files}),
        CHUNKER,
        TOKENS,
        HashingEmbedder(64),
        batch_files=batch_files,
    )


async def test_cancelling_the_run_lets_a_started_write_finish() -> None:
    store = _HeldStore()
    service = _numbered(store, 6, batch_files=2)
    run = asyncio.create_task(service.index(ROOT))
    await store.writing.wait()
    run.cancel()
    await asyncio.sleep(0)
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    # The first batch's write was not cut off: both of its files are stored, whole.
    stored = await store.file_hashes(indexing.repository_id_for(ROOT))
    assert len(stored) == 2


class _SlowStore(InMemoryChunkStore):
    """Counts the writes in flight at once (each write yields to the loop a few times)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            for _ in range(5):
                await asyncio.sleep(0.01)
            await super().replace_files(repository_id, files)
        finally:
            self.in_flight -= 1


async def test_two_writes_are_in_flight_and_never_more() -> None:
    store = _SlowStore()
    result = await _numbered(store, 12, batch_files=1).index(ROOT)
    assert result.files_indexed == 12
    assert store.most == indexing.WRITE_DEPTH == 2
    assert len(await store.chunks(result.repository_id)) == 12


class _ScanFirstTree(InMemorySourceTree):
    """Says when a scan starts."""

    def __init__(self, trees: dict[str, dict[str, bytes]]) -> None:
        super().__init__(trees)
        self.scanning = asyncio.Event()
        self.scans = 0

    async def scan(self, root):  # type: ignore[no-untyped-def]
        self.scans += 1
        self.scanning.set()
        return await super().scan(root)


class _SlowLockStore(InMemoryChunkStore):
    """Takes the lock only once the scan has started (as a server still starting would)."""

    def __init__(self, tree: _ScanFirstTree) -> None:
        super().__init__()
        self._tree = tree

    @contextlib.asynccontextmanager
    async def indexing_lock(self, repository_id, *, wait):  # type: ignore[no-untyped-def]
        await asyncio.wait_for(self._tree.scanning.wait(), 5)
        async with super().indexing_lock(repository_id, wait=wait):
            yield


async def test_the_scan_runs_while_the_lock_is_taken() -> None:
    tree = _ScanFirstTree({ROOT: {"a.py": b"def a():\n    return 1\n"}})
    service = IndexingService(_SlowLockStore(tree), tree, CHUNKER, TOKENS, HashingEmbedder(64))
    result = await service.index(ROOT)
    assert result.files_indexed == 1 and tree.scans == 1


async def test_a_run_that_waited_for_the_lock_scans_again() -> None:
    tree = _ScanFirstTree({ROOT: {"a.py": b"def a():\n    return 1\n"}})
    store = _HeldStore()
    first = asyncio.create_task(IndexingService(store, tree, CHUNKER, TOKENS, None).index(ROOT))
    await store.writing.wait()  # the first run holds the lock
    second = asyncio.create_task(IndexingService(store, tree, CHUNKER, TOKENS, None).index(ROOT))
    await asyncio.sleep(0.05)  # its first scan is done; it waits for the lock
    assert tree.scans == 2 and not second.done()
    tree.put(ROOT, "b.py", "def b():\n    return 2\n")  # written while the second run waits
    store.release.set()
    assert (await first).files_indexed == 1
    again = await second
    assert tree.scans == 3  # the first run's, the second's early one, and its fresh one
    assert again.files_indexed == 1 and again.files_unchanged == 1  # b.py, found afresh


async def test_a_bad_root_fails_the_run_without_a_stray_scan_error() -> None:
    store = InMemoryChunkStore()
    service = IndexingService(store, InMemorySourceTree({}), CHUNKER, TOKENS, None)
    with pytest.raises(ValidationFailed):
        await service.index("/no/such/root")


class _RecordingChunker:
    """The real chunker, noting each file it chunks and whether the lock was held then."""

    def __init__(self, store: _GatedLockStore) -> None:
        self._store = store
        self.chunked: list[tuple[str, bool]] = []
        self._more = threading.Condition()

    def chunk(self, path, text, language):  # type: ignore[no-untyped-def]
        with self._more:
            self.chunked.append((path, self._store.locked))
            self._more.notify_all()
        return CHUNKER.chunk(path, text, language)

    async def wait_for(self, n_files: int) -> None:
        """Until ``n_files`` were chunked (chunking runs in a thread)."""

        def wait() -> bool:
            with self._more:
                return self._more.wait_for(lambda: len(self.chunked) >= n_files, timeout=10)

        assert await asyncio.to_thread(wait)


class _GatedLockStore(InMemoryChunkStore):
    """Grants the indexing lock when the test opens the gate (a server still starting)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.locked = False

    @contextlib.asynccontextmanager
    async def indexing_lock(self, repository_id, *, wait):  # type: ignore[no-untyped-def]
        await self.gate.wait()
        async with super().indexing_lock(repository_id, wait=wait):
            self.locked = True
            try:
                yield
            finally:
                self.locked = False


def _numbered_files(n: int, edited: Sequence[int] = ()) -> dict[str, bytes]:
    return {
        f"m{i}.py": f"def f{i}():\n    return {i}{'  # edited' if i in edited else ''}\n".encode()
        for i in range(n)
    }


async def _early_run(
    tree: InMemorySourceTree, store: _GatedLockStore
) -> tuple[_RecordingChunker, indexing.IndexResult]:
    """Index with the lock held back until every file was chunked early (in a thread)."""
    chunker = _RecordingChunker(store)
    service = IndexingService(store, tree, chunker, TOKENS, HashingEmbedder(64), batch_files=3)  # type: ignore[arg-type]
    store.gate.clear()
    run = asyncio.create_task(service.index(ROOT))
    n_files = len((await tree.scan(ROOT)).files)
    await chunker.wait_for(n_files)
    await asyncio.sleep(0.02)
    assert not run.done()
    store.gate.set()
    return chunker, await run


async def test_files_are_chunked_while_the_lock_is_taken_and_used_once_it_is_held() -> None:
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: _numbered_files(10)})
    chunker, result = await _early_run(tree, store)
    assert all(not locked for _, locked in chunker.chunked)
    assert sorted(p for p, _ in chunker.chunked) == sorted(_numbered_files(10))  # each once
    assert result.status is IndexStatus.SUCCESS and result.files_indexed == 10
    reference = InMemoryChunkStore()
    await _service(tree, reference, HashingEmbedder(64)).index(ROOT)
    assert _dump(await store.chunks(result.repository_id)) == _dump(
        await reference.chunks(result.repository_id)
    )


async def test_early_chunks_of_files_that_did_not_change_are_dropped() -> None:
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: _numbered_files(10)})
    await _service(tree, store, HashingEmbedder(64)).index(ROOT)
    edited = InMemorySourceTree({ROOT: _numbered_files(10, edited=(2, 7))})
    chunker, result = await _early_run(edited, store)
    assert len(chunker.chunked) == 10  # all of them, early, and none again
    assert (result.files_indexed, result.files_unchanged) == (2, 8)
    reference = InMemoryChunkStore()
    await _service(edited, reference, HashingEmbedder(64)).index(ROOT)
    assert _dump(await store.chunks(result.repository_id)) == _dump(
        await reference.chunks(result.repository_id)
    )


async def test_early_chunking_stops_at_its_file_limit_and_when_the_lock_is_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexing, "EARLY_FILES", 4)
    store = _GatedLockStore()
    chunker = _RecordingChunker(store)
    tree = InMemorySourceTree({ROOT: _numbered_files(12)})
    service = IndexingService(store, tree, chunker, TOKENS, None, batch_files=2)  # type: ignore[arg-type]
    store.gate.clear()
    run = asyncio.create_task(service.index(ROOT))
    await chunker.wait_for(4)
    await asyncio.sleep(0.05)
    assert len(chunker.chunked) == 4  # no more before the lock
    store.gate.set()
    result = await run
    assert result.files_indexed == 12
    assert sorted(p for p, _ in chunker.chunked) == sorted(_numbered_files(12))
    assert [locked for _, locked in chunker.chunked] == [False] * 4 + [True] * 8


def _dump(chunks: Sequence[object]) -> list[str]:
    return sorted(c.model_dump_json() for c in chunks)  # type: ignore[attr-defined]


async def test_worker_processes_start_only_for_files_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Early chunking runs in a thread: re-indexing an unchanged repository while the store
    starts spawns no worker process; with changes, the pool starts once, after the lock."""
    pools: list[object] = []
    real_pool = indexing._chunking_pool

    def counted(*args):  # type: ignore[no-untyped-def]
        pools.append(real_pool(*args))
        return pools[-1]

    monkeypatch.setattr(indexing, "_chunking_pool", counted)
    store = _GatedLockStore()
    tree = InMemorySourceTree({ROOT: _numbered_files(30)})
    monkeypatch.setattr(indexing, "EARLY_FILES", 4)  # most edits are left to the workers

    def service() -> IndexingService:
        return IndexingService(
            store,
            tree,
            CHUNKER,
            TOKENS,
            None,
            batch_files=2,
            workers=2,
            pool_min_files=0,
        )

    first = await service().index(ROOT)  # the lock at once: no early chunking, a pool
    assert first.files_indexed == 30 and len(pools) == 1
    store.gate.clear()
    run = asyncio.create_task(service().index(ROOT))
    await asyncio.sleep(0.3)  # early chunking of unchanged files, in this process
    store.gate.set()
    again = await run
    assert again.files_unchanged == 30 and len(pools) == 1
    tree.put(ROOT, "m3.py", "def f3():\n    return 'edited'\n")
    for i in range(4, 30):
        tree.put(ROOT, f"m{i}.py", f"def f{i}():\n    return {i} + 1\n")
    store.gate.clear()
    run = asyncio.create_task(service().index(ROOT))
    await asyncio.sleep(0.3)
    store.gate.set()
    edited = await run
    assert edited.files_indexed == 27 and len(pools) == 2  # one more, for the 26 left
    reference = InMemoryChunkStore()
    await IndexingService(reference, tree, CHUNKER, TOKENS, None).index(ROOT)
    assert _dump(await store.chunks(edited.repository_id)) == _dump(
        await reference.chunks(edited.repository_id)
    )
