"""What an indexing run reports beyond its counts: the embedding phase of its progress, and
the files its scan left out, by reason."""

from __future__ import annotations

from pathlib import Path

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core.models import IndexRequest, SkippedFile, SkipReason
from codebase_mcp_search.core.services import IndexingService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, ROOT, TOKENS, CountingEmbedder, new_service


async def test_the_embedding_phase_counts_vectors_as_batches_are_stored() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(5)}
    tree, store, emb = InMemorySourceTree({ROOT: files}), InMemoryChunkStore(), CountingEmbedder()
    service = IndexingService(
        store, tree, CHUNKER, TOKENS, emb, batch_files=2, vector_batch=2, chunking_pool=THREADS
    )
    events: list[tuple[str, int, int]] = []

    async def progress(phase: str, done: int, total: int) -> None:
        events.append((phase, done, total))

    lexical = await service.index(IndexRequest(root=ROOT), progress=progress)
    # The lexical layer has no embedding phase: it asks nothing of the model.
    assert not [e for e in events if e[0] == "embedding"] and emb.embedded == []
    assert events[0] == ("scanning", 0, 1) and events[-1] == ("done", 5, 5)
    assert [d for p, d, _ in events if p == "writing"] == [2, 4, 5]
    assert lexical.vectors_missing == 5

    events.clear()
    result = await service.build_vectors(IndexRequest(root=ROOT), progress=progress)
    embedding = [(d, t) for p, d, t in events if p == "embedding"]
    # Counted against what was missing when the run began, one report per stored batch.
    assert embedding == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert result.chunks_embedded == len(emb.embedded) == 5
    assert events[-1] == ("done", 5, 5)

    # Every vector from the cache: the lexical run attaches them, nothing is left to build.
    events.clear()
    forced = await service.index(IndexRequest(root=ROOT, force=True), progress=progress)
    assert forced.embeddings_cached == 5 and forced.vectors_missing == 0
    again = await service.build_vectors(IndexRequest(root=ROOT), progress=progress)
    assert again.chunks_embedded == 0 and len(emb.embedded) == 5
    assert not [e for e in events if e[0] == "embedding"]


async def test_without_an_embedder_there_is_no_embedding_phase() -> None:
    files = {"a.py": b"def a():\n    return 1\n"}
    events: list[str] = []
    await new_service(InMemorySourceTree({ROOT: files}), InMemoryChunkStore(), None).index(
        IndexRequest(root=ROOT), progress=lambda phase, done, total: events.append(phase)
    )
    assert "embedding" not in events and events[-1] == "done"


async def test_the_result_counts_skipped_files_by_reason_and_lists_them(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("def main():\n    return 0\n")
    (tmp_path / "yarn.lock").write_text("# lock\n")
    (tmp_path / "poetry.lock").write_text("# lock\n")
    (tmp_path / ".env").write_text("TOKEN=x\n")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "i.js").write_text("module.exports = 1\n")
    service = IndexingService(
        InMemoryChunkStore(), LocalSourceTree(), CHUNKER, TOKENS, None, chunking_pool=THREADS
    )
    result = await service.index(IndexRequest(root=str(tmp_path)))
    assert result.files_indexed == 1
    assert result.files_skipped == {"lock_file": 2, "secret": 1, "excluded_dir": 1}
    assert result.skipped == [
        SkippedFile(path=".env", reason=SkipReason.SECRET),
        SkippedFile(path="node_modules/", reason=SkipReason.EXCLUDED_DIR),
        SkippedFile(path="poetry.lock", reason=SkipReason.LOCK_FILE),
        SkippedFile(path="yarn.lock", reason=SkipReason.LOCK_FILE),
    ]
    # Reported on every run, unchanged ones too: they describe the tree, not the work done.
    again = await service.index(IndexRequest(root=str(tmp_path)))
    assert again.files_indexed == 0 and again.files_skipped == result.files_skipped
