"""IndexingService: incremental indexing, the embedding cache, errors, progress, cancellation.

The batch pipeline's overlap, early chunking and worker processes: test_indexing_pipeline.py;
the decisions as pure functions: test_indexing_decisions.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import (
    Cancelled,
    EmbedderUnavailable,
    ModelMismatch,
    ValidationFailed,
)
from codebase_mcp_search.core.models import Embeddings, IndexRequest, IndexStatus, SearchFilters
from codebase_mcp_search.core.services import CancellationToken, IndexingService
from tests.factories import THREADS, needs_forced_reindex
from tests.unit.indexing_doubles import (
    CHUNKER,
    FILES,
    ROOT,
    TOKENS,
    CountingEmbedder,
    dump,
    index_both,
    new_service,
)


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


async def test_first_index_then_unchanged_reindex_does_nothing() -> None:
    tree, store, emb = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        CountingStore(),
        CountingEmbedder(),
    )
    service = new_service(tree, store, emb)
    first, vectors = await index_both(service, IndexRequest(root=ROOT))
    assert first.status is IndexStatus.SUCCESS
    assert (first.files_indexed, first.files_unchanged, first.files_deleted) == (3, 0, 0)
    assert first.chunks_created == len(await store.chunks(first.repository_id)) > 3
    # The lexical layer asks nothing of the model; the semantic layer embeds every chunk.
    assert first.chunks_embedded == 0 and first.vectors_missing == first.chunks_created
    assert vectors.chunks_embedded == len(emb.embedded) == first.chunks_created
    assert vectors.vectors_missing == 0
    writes, embedded = store.writes, len(emb.embedded)
    again, more = await index_both(service, IndexRequest(root=ROOT))
    assert (again.files_indexed, again.files_unchanged, again.vectors_missing) == (0, 3, 0)
    assert more.chunks_embedded == 0
    assert store.writes == writes and len(emb.embedded) == embedded


async def test_edit_reembeds_only_changed_chunks_and_force_embeds_nothing() -> None:
    tree, store, emb = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        CountingStore(),
        CountingEmbedder(),
    )
    service = new_service(tree, store, emb)
    await index_both(service, IndexRequest(root=ROOT))
    emb.embedded.clear()
    edited = FILES["app/auth.py"].replace(
        "return hash_password(pw) == digest",
        "return hmac.compare_digest(hash_password(pw), digest)",
    )
    tree.put(ROOT, "app/auth.py", edited)
    result, _ = await index_both(service, IndexRequest(root=ROOT))
    assert result.files_indexed == 1 and result.files_unchanged == 2
    assert emb.embedded and all(
        "hash_password(pw):\n    return hashlib" not in t for t in emb.embedded
    )
    assert any("compare_digest" in t for t in emb.embedded)
    emb.embedded.clear()
    forced, vectors = await index_both(service, IndexRequest(root=ROOT, force=True))
    assert forced.files_indexed == 3 and vectors.chunks_embedded == 0 and emb.embedded == []
    # Every vector came from the cache with the lexical run: nothing is left missing.
    assert forced.embeddings_cached == forced.chunks_created and forced.vectors_missing == 0


async def test_an_index_of_an_older_analyser_is_derived_again_once() -> None:
    tree, store, emb = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        CountingStore(),
        CountingEmbedder(),
    )
    service = new_service(tree, store, emb)
    first, _ = await index_both(service, IndexRequest(root=ROOT))
    assert (await store.get_repository(first.repository_id)).analyser_version == (
        lexical.ANALYSER_VERSION
    )
    # As an index written before the analyser's last change would be recorded.
    old = await store.get_repository(first.repository_id)
    await store.save_repository(old.model_copy(update={"analyser_version": 1}))
    emb.embedded.clear()
    again, _ = await index_both(service, IndexRequest(root=ROOT))
    assert (again.files_indexed, again.files_unchanged) == (3, 0)
    assert emb.embedded == [] and again.vectors_missing == 0  # vectors from the cache
    repo = await store.get_repository(first.repository_id)
    assert repo.analyser_version == lexical.ANALYSER_VERSION
    third, _ = await index_both(service, IndexRequest(root=ROOT))
    assert (third.files_indexed, third.files_unchanged) == (0, 3)


async def test_deleted_files_lose_their_chunks() -> None:
    tree, store = (
        InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}}),
        InMemoryChunkStore(),
    )
    service = new_service(tree, store, None)
    first = await service.index(IndexRequest(root=ROOT))
    tree.remove(ROOT, "app/server.go")
    result = await service.index(IndexRequest(root=ROOT))
    assert result.files_deleted == 1
    assert {c.file_path for c in await store.chunks(first.repository_id)} == {
        "app/auth.py",
        "README.md",
    }
    repo = await store.get_repository(first.repository_id)
    assert repo.file_count == 2


# Latin-1 text: not UTF-8, yet no binary to the skip policy, so the scan keeps it and reading
# it fails (bytes with a NUL would be skipped as binary before that).
UNDECODABLE = {"ok.py": b"x = 1\n", "bad.py": "s = 'caf\xe9'\n".encode("latin-1")}


async def test_undecodable_file_is_a_per_file_error() -> None:
    tree = InMemorySourceTree({ROOT: UNDECODABLE})
    store = InMemoryChunkStore()
    result = await new_service(tree, store, None).index(IndexRequest(root=ROOT))
    assert result.status is IndexStatus.PARTIAL
    assert [e.path for e in result.errors] == ["bad.py"]
    assert {c.file_path for c in await store.chunks(result.repository_id)} == {"ok.py"}


async def test_unchanged_reindex_beside_an_undecodable_file_is_partial_not_failed() -> None:
    tree = InMemorySourceTree({ROOT: UNDECODABLE})
    store = InMemoryChunkStore()
    service = new_service(tree, store, None)
    await service.index(IndexRequest(root=ROOT))
    again = await service.index(IndexRequest(root=ROOT))
    # ok.py is indexed and up to date: the repository is searchable, only bad.py is missing.
    assert again.files_indexed == 0 and [e.path for e in again.errors] == ["bad.py"]
    assert again.status is IndexStatus.PARTIAL


async def test_file_that_becomes_unreadable_keeps_no_stale_chunks() -> None:
    tree, store = InMemorySourceTree({ROOT: {"a.py": b"x = 1\n"}}), InMemoryChunkStore()
    service = new_service(tree, store, None)
    first = await service.index(IndexRequest(root=ROOT))
    tree.put(ROOT, "a.py", b"\xff\xfe bad")
    result = await service.index(IndexRequest(root=ROOT))
    assert result.status is IndexStatus.FAILED
    assert await store.chunks(first.repository_id) == []


async def test_model_change_requires_force() -> None:
    tree, store = (
        InMemorySourceTree({ROOT: {"a.py": b"def f():\n    return 1\n"}}),
        InMemoryChunkStore(),
    )
    await index_both(
        new_service(tree, store, HashingEmbedder(64, inline=False)), IndexRequest(root=ROOT)
    )
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await new_service(tree, store, HashingEmbedder(128, inline=False)).index(
            IndexRequest(root=ROOT)
        )
    result, vectors = await index_both(
        new_service(tree, store, HashingEmbedder(128, inline=False)),
        IndexRequest(root=ROOT, force=True),
    )
    repo = await store.get_repository(result.repository_id)
    assert repo.embedding_model == "hash-128" and result.vectors_missing == 1
    assert vectors.chunks_embedded == 1 and repo.vector_count == 1


async def test_a_lexical_only_repository_gains_vectors_without_force() -> None:
    files = {"a.py": b"def f():\n    return 1\n", "b.py": b"def g():\n    return 2\n"}
    tree, store = InMemorySourceTree({ROOT: files}), InMemoryChunkStore()
    await new_service(tree, store, None).index(IndexRequest(root=ROOT))
    result, vectors = await index_both(
        new_service(tree, store, HashingEmbedder(64, inline=False)), IndexRequest(root=ROOT)
    )
    assert result.files_indexed == 2 and vectors.chunks_embedded == 2
    repo = await store.get_repository(result.repository_id)
    assert repo.embedding_model == "hash-64" and repo.vectors_missing == 0
    # The other way would lose vectors: that still needs force.
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await new_service(tree, store, None).index(IndexRequest(root=ROOT))


async def test_relative_root_is_rejected() -> None:
    with pytest.raises(ValidationFailed, match="absolute"):
        IndexRequest(root="repo")  # a request built field by field is checked too
    with pytest.raises(ValidationFailed, match="absolute"):
        IndexRequest.build("repo")


def test_a_blank_repository_name_is_refused() -> None:
    """A blank name is an error, not a silent "keep the old name"; leaving it out keeps it,
    and a name is trimmed."""
    for blank in ("", "   "):
        with pytest.raises(ValidationFailed) as err:
            IndexRequest.build(ROOT, name=blank)
        assert err.value.field == "name" and "must not be blank" in str(err.value)
    assert IndexRequest.build(ROOT).name is None
    assert IndexRequest.build(ROOT, name=" demo ").name == "demo"


async def test_progress_is_reported_in_order() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(5)}
    events: list[tuple[str, int, int]] = []

    async def progress(phase: str, done: int, total: int) -> None:
        events.append((phase, done, total))

    await new_service(InMemorySourceTree({ROOT: files}), InMemoryChunkStore(), None).index(
        IndexRequest(root=ROOT), progress=progress
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

    service = new_service(InMemorySourceTree({ROOT: files}), store, None)
    with pytest.raises(Cancelled):
        await service.index(IndexRequest(root=ROOT), progress=progress, cancel=token)
    repo = await store.find_repository(ROOT)
    assert repo is not None
    hashes = await store.file_hashes(repo.id)
    assert sorted(hashes) == ["m0.py", "m1.py"]
    # Resuming finishes the job and converges.
    done = await service.index(IndexRequest(root=ROOT))
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
    service = new_service(tree, store, emb)
    await index_both(service, IndexRequest(root=ROOT))
    for path in before:
        tree.remove(ROOT, path)
    for path, text in after.items():
        tree.put(ROOT, path, text)
    result, _ = await index_both(service, IndexRequest(root=ROOT))

    fresh_store = InMemoryChunkStore()
    fresh, _ = await index_both(
        new_service(
            InMemorySourceTree({ROOT: {k: v.encode() for k, v in after.items()}}),
            fresh_store,
            CountingEmbedder(),
        ),
        IndexRequest(root=ROOT),
    )
    assert _state(await store.chunks(result.repository_id)) == _state(
        await fresh_store.chunks(fresh.repository_id)
    )
    assert await store.file_hashes(result.repository_id) == await fresh_store.file_hashes(
        fresh.repository_id
    )
    assert (await store.get_repository(result.repository_id)).vectors_missing == 0

    # And a third run over the unchanged tree writes and embeds nothing.
    embedded = len(emb.embedded)
    third, vectors = await index_both(service, IndexRequest(root=ROOT))
    assert third.files_indexed == 0 and third.files_deleted == 0 and len(emb.embedded) == embedded
    assert vectors.chunks_embedded == 0


class FailingEmbedder(HashingEmbedder):
    """Fails on its second call, like a server that goes down mid-run."""

    def __init__(self) -> None:
        super().__init__(64, inline=False)
        self.calls = 0

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        self.calls += 1
        if self.calls == 2:
            raise EmbedderUnavailable("embedding server at http://127.0.0.1:9 went away")
        return await super().embed_documents(texts)


async def test_embedder_failure_mid_vectors_keeps_stored_batches_and_resumes() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(6)}
    store = InMemoryChunkStore()
    tree = InMemorySourceTree({ROOT: files})
    failing = IndexingService(
        store, tree, CHUNKER, TOKENS, FailingEmbedder(), vector_batch=2, chunking_pool=THREADS
    )
    # The lexical layer needs no model: every file is written and searchable.
    lexical = await failing.index(IndexRequest(root=ROOT))
    assert lexical.files_indexed == 6 and lexical.vectors_missing == 6
    with pytest.raises(EmbedderUnavailable):
        await failing.build_vectors(IndexRequest(root=ROOT))
    # The first batch of vectors was stored before the model went away: it stays.
    repo = await store.get_repository(lexical.repository_id)
    assert (repo.vector_count, repo.vectors_missing) == (2, 4)
    emb = CountingEmbedder(64)
    resumed = await new_service(tree, store, emb).build_vectors(IndexRequest(root=ROOT))
    assert resumed.chunks_embedded == len(emb.embedded) == 4 and resumed.vectors_missing == 0


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
        _TruncatingEmbedder(64, inline=False),
        chunking_pool=THREADS,
    )
    _, vectors = await index_both(service, IndexRequest(root=ROOT))
    assert vectors.chunks_embedded == 2 and vectors.chunks_truncated == 1


async def test_an_inline_embedder_embeds_as_the_lexical_run_writes() -> None:
    """Feature hashing costs less than a second pass: one run writes chunks and vectors."""
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(4)}
    files["same.py"] = files["m0.py"]  # a text met twice is embedded once
    store = InMemoryChunkStore()
    embedder = HashingEmbedder(64)
    assert embedder.inline
    service = new_service(InMemorySourceTree({ROOT: files}), store, embedder)
    result = await service.index(IndexRequest(root=ROOT))
    assert result.vectors_missing == 0
    assert result.chunks_embedded == 4 and result.embeddings_cached == 1
    repository = await store.get_repository(result.repository_id)
    assert repository.vector_count == repository.chunk_count == 5
    (chunk,) = [c for c in await store.chunks(result.repository_id) if c.file_path == "m1.py"]
    expected = (await embedder.embed_documents([chunk.content])).vectors[0]
    hits, _ = await store.vector_search(expected, SearchFilters(), 1)
    assert hits[0].chunk.id == chunk.id and hits[0].score == pytest.approx(1.0)
    # Nothing is left for the semantic layer.
    assert (await service.build_vectors(IndexRequest(root=ROOT))).chunks_embedded == 0


class CountingTree(InMemorySourceTree):
    """A source tree that counts its scans."""

    scans = 0

    async def scan(self, root, cancelled=None):  # type: ignore[no-untyped-def]
        self.scans += 1
        return await super().scan(root, cancelled)


async def test_an_index_takes_the_head_start_of_its_root() -> None:
    """A first index begun while the store opens (``head_start``) is the index that follows:
    one scan, and the same index as a run begun at the call."""
    tree = CountingTree({ROOT: {k: v.encode() for k, v in FILES.items()}})
    store = InMemoryChunkStore()
    service = new_service(tree, store, HashingEmbedder(dimension=64))
    service.head_start(ROOT)
    result = await service.index(IndexRequest(root=ROOT))
    assert result.status is IndexStatus.SUCCESS and tree.scans == 1
    other = InMemoryChunkStore()
    await new_service(InMemorySourceTree(tree._trees), other, HashingEmbedder(dimension=64)).index(
        IndexRequest(root=ROOT)
    )
    repo = result.repository_id
    assert dump(await store.chunks(repo)) == dump(await other.chunks(repo))
    # Not taken: ended by drop_head_starts; an index with its own cancel token begins afresh.
    service.head_start("/elsewhere")
    service.head_start(ROOT)
    await service.index(IndexRequest(root=ROOT), cancel=CancellationToken())
    assert tree.scans == 4  # the first, both head starts, and the index begun afresh
    await service.drop_head_starts()
    assert service._heads == {}


class PrestartRecorder(type(THREADS)):  # type: ignore[misc]
    """The thread pool, recording the workers asked to start ahead."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def prestart(self, workers, chunker, tokens):  # type: ignore[no-untyped-def]
        self.asked.append(workers)


@pytest.mark.parametrize(("min_files", "asked"), [(0, [2]), (1000, [])])
async def test_a_head_start_starts_the_workers_a_run_of_as_many_files_would(
    min_files: int, asked: list[int]
) -> None:
    pool = PrestartRecorder()
    tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in FILES.items()}})
    service = IndexingService(
        InMemoryChunkStore(),
        tree,
        CHUNKER,
        TOKENS,
        None,
        batch_files=1,
        workers=2,
        pool_min_files=min_files,
        chunking_pool=pool,
    )
    service.head_start(ROOT)
    await service.index(IndexRequest(root=ROOT))
    assert pool.asked == asked
