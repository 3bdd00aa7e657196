"""The MCP tools on a new user's first runs: skipped files reported, a repository indexed
without vectors searched lexically beside the others, and a semantic search without a model
told how to get one (through a real fastmcp client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastmcp import Client

from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import EmbeddingServer, embedding_server
from tests.factories import write_sample_repo
from tests.integration.test_mcp_jobs import ollama_settings
from tests.integration.test_mcp_server import call, error_of, index_both


async def test_semantic_search_without_a_model_names_the_mcp_fixes(tmp_path: Path) -> None:
    root = write_sample_repo(tmp_path / "proj")
    async with Client(build_server(Settings(embedder="none"))) as c:
        await call(c, "index_repository", repo_path=str(root))
        text = await error_of(c, "search_code", query="retry", mode="semantic")
    assert text.startswith("EMBEDDER_UNAVAILABLE: semantic search needs an embedding model")
    assert "mode='lexical'" in text and "CODEBASE_MCP_EMBEDDER=auto" in text and "onnx" in text
    assert "index_repository" in text
    assert "hash" not in text and "--" not in text  # no test embedder, no CLI flags


async def test_a_repository_without_vectors_is_searched_lexically_and_named(
    tmp_path: Path,
) -> None:
    old = write_sample_repo(tmp_path / "old")
    new = write_sample_repo(tmp_path / "new")
    (new / "pkg" / "names.py").write_text("def slug(title):\n    return title.lower()\n")
    async with Client(build_server(Settings(embedder="none"))) as c:
        await call(c, "index_repository", repo_path=str(old), name="old")
    with embedding_server() as model:  # a model's vectors come in a second layer
        await _two_layers_then_search(old, new, model)


async def _two_layers_then_search(old: Path, new: Path, model: EmbeddingServer) -> None:
    updates: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(message)

    server = build_server(ollama_settings(model))
    async with Client(server, progress_handler=on_progress) as c:
        added = await index_both(c, repo_path=str(new), name="new")
        # Searchable at once; the vectors came after, from the semantic job it queued.
        assert added["vectors_missing"] >= 1 and updates[-1] == "Completed"
        assert "get_job_status" in added["message"]
        for detail in ("detailed", "concise"):
            found = await call(
                c, "search_code", query="slugify title", mode="hybrid", detail_level=detail
            )
            assert found["mode"] == "hybrid" and found["lexical_only_repositories"] == ["old"]
        text = await call(c, "search_code", query="slugify title", response_format="markdown")
        assert "Ranked lexically (indexed without vectors; index_repository adds them): old" in text
        semantic = await call(c, "search_code", query="slugify title", mode="semantic")
        assert semantic["lexical_only_repositories"] == ["old"]
        assert any(h["symbol"] == "slugify" for h in semantic["results"])
        # Only where it applies: a search of the repository with vectors has no such field.
        only = await call(c, "search_code", query="slugify", repository_id=added["repository_id"])
        assert "lexical_only_repositories" not in only
        # A plain index_repository adds the vectors; then nothing is ranked lexically.
        again = await index_both(c, repo_path=str(old))
        assert again["status"] == "success" and again["files_indexed"] == 2
        after = await call(c, "search_code", query="slugify title", mode="semantic")
        assert "lexical_only_repositories" not in after


async def test_index_repository_reports_skipped_files(tmp_path: Path) -> None:
    root = write_sample_repo(tmp_path / "proj")
    (root / ".gitignore").write_text("*.log\n")
    for i in range(205):
        (root / f"run{i:03}.log").write_text("x\n")
    (root / "yarn.lock").write_text("# lock\n")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "i.js").write_text("module.exports = 1\n")
    counts = {"ignored": 205, "lock_file": 1, "excluded_dir": 1}
    async with Client(build_server(Settings(embedder="none"))) as c:
        detailed: dict[str, Any] = await call(c, "index_repository", repo_path=str(root))
        assert detailed["files_skipped"] == counts
        listed = detailed["skipped"]
        assert len(listed) == 200 and detailed["skipped_not_listed"] == 7
        assert listed[0] == {"path": "node_modules/", "reason": "excluded_dir"}
        concise = await call(c, "index_repository", repo_path=str(root), detail_level="concise")
        assert concise["files_skipped"] == counts
        assert "skipped" not in concise and "skipped_not_listed" not in concise
        text = await call(c, "index_repository", repo_path=str(root), response_format="markdown")
        assert "- skipped: 1 excluded_dir, 205 ignored, 1 lock_file" in text
        assert "## Skipped (207)" in text and "- ... and 7 more not listed" in text
