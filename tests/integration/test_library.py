"""The library facade over the real container: what another Python tool would do."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_mcp_search.core.errors import RepositoryNotFound, ValidationFailed
from codebase_mcp_search.core.models import SearchMode, TaskStatus
from codebase_mcp_search.entrypoints.facade import open_codebase, open_workspaces
from codebase_mcp_search.entrypoints.settings import Settings
from tests.factories import write_sample_repo


def _repo(tmp_path: Path) -> Path:
    root = write_sample_repo(tmp_path / "proj")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "generated.py").write_text("def retry_with_backoff():\n    pass\n")
    return root


async def test_index_search_and_reindex(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    async with open_codebase(Settings(embedder="hash")) as cb:
        first = await cb.index(root, name="demo")
        assert first.files_indexed == 3 and first.status.value == "success"  # incl. .gitignore
        result = await cb.search("retry with backoff after failure", limit=5)
        assert result.mode is SearchMode.HYBRID
        assert result.hits[0].file_path == "pkg/retry.py"
        assert result.hits[0].symbol == "retry_with_backoff"
        assert all(not h.file_path.startswith("build/") for h in result.hits)
        repos = await cb.repositories()
        assert [(r.name, r.file_count) for r in repos] == [("demo", 3)]

        (root / "pkg" / "names.py").unlink()
        again = await cb.index(root)
        assert (again.files_deleted, again.files_indexed) == (1, 0)
        await cb.delete_repository(first.repository_id)
        assert await cb.repositories() == []
        with pytest.raises(RepositoryNotFound):
            await cb.delete_repository(first.repository_id)


async def test_no_model_loads_without_vectors_and_mixed_projects_search_whole(
    tmp_path: Path,
) -> None:
    old = write_sample_repo(tmp_path / "old")
    new = write_sample_repo(tmp_path / "new")
    async with open_codebase(Settings(embedder="none")) as cb:
        await cb.index(old, name="old")
    async with open_workspaces(Settings(embedder="hash")) as workspaces:
        cb = await workspaces.codebase()
        # Nothing to compare vectors with: answered lexically, and no model is loaded.
        hybrid = await cb.search("retry with backoff")
        lexical = await cb.search("retry with backoff", mode="lexical")
        assert hybrid.mode is lexical.mode is SearchMode.LEXICAL
        assert hybrid.hits[0].symbol == "retry_with_backoff"
        assert await workspaces.embedder_status() == "not loaded"
        # A repository with vectors beside it: the whole project is searched, the old one
        # lexically (and named), in both modes that compare vectors.
        added = await cb.index(new, name="new")
        for mode in ("semantic", "hybrid"):
            mixed = await cb.search("retry with backoff", mode=mode)
            assert mixed.mode is SearchMode(mode)
            assert mixed.lexical_only_repositories == ["old"]
            # (The two copies hold the same text: one hit, the other copy among its locations.)
            top = mixed.hits[0]
            assert top.symbol == "retry_with_backoff"
            found = {top.repository_id, *(o.repository_id for o in top.other_locations)}
            assert len(found) == 2 and added.repository_id in found
        # A plain re-index adds its vectors (no force needed).
        again = await cb.index(old)
        assert again.chunks_embedded + again.embeddings_cached > 0 and again.files_indexed == 2
        after = await cb.search("retry with backoff", mode="semantic")
        assert after.lexical_only_repositories == []
        assert all(r.embedding_model for r in await cb.repositories())


async def test_tasks_through_the_facade() -> None:
    async with open_codebase(Settings()) as cb:
        task = await cb.tasks.create("Write the README")
        done = await cb.tasks.update(task.id, status="complete")
        assert done.status is TaskStatus.COMPLETE and done.completed_at is not None


async def test_bad_paths_and_projects(tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed, match="project_id"):
        async with open_codebase(Settings(), project_id="no/slashes"):
            pass
    # A blank id (an unset variable in a script) is refused, not taken as the default.
    with pytest.raises(ValidationFailed, match="project_id='': is blank"):
        async with open_codebase(Settings(), project_id=""):
            pass
    async with open_codebase(Settings()) as cb:
        with pytest.raises(ValidationFailed, match="does not exist"):
            await cb.index(tmp_path / "missing")
        (tmp_path / "f.txt").write_text("x")
        with pytest.raises(ValidationFailed, match="not a directory"):
            await cb.index(tmp_path / "f.txt")
