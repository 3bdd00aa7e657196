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


async def test_the_embedding_phase_counts_chunks_as_batches_are_embedded() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(5)}
    tree, store, emb = InMemorySourceTree({ROOT: files}), InMemoryChunkStore(), CountingEmbedder()
    events: list[tuple[str, int, int]] = []

    async def progress(phase: str, done: int, total: int) -> None:
        events.append((phase, done, total))

    result = await new_service(tree, store, emb).index(IndexRequest(root=ROOT), progress=progress)
    embedding = [(d, t) for p, d, t in events if p == "embedding"]
    # Three batches of two files: each announced (the total grows), then done.
    assert len(embedding) == 6
    assert all(d <= t for d, t in embedding)
    assert [d for d, _ in embedding] == sorted(d for d, _ in embedding)
    assert [t for _, t in embedding] == sorted(t for _, t in embedding)
    assert embedding[-1] == (result.chunks_embedded, result.chunks_embedded) == (5, 5)
    # The other phases report as before.
    assert events[0] == ("scanning", 0, 1) and events[-1] == ("done", 5, 5)
    assert [d for p, d, _ in events if p == "writing"] == [2, 4, 5]

    # Every vector from the cache: nothing goes to the model, no embedding phase.
    events.clear()
    await new_service(tree, store, emb).index(
        IndexRequest(root=ROOT, force=True), progress=progress
    )
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
