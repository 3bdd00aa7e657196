"""SourceTree contract, on the in-memory tree and on the local filesystem: what ``touched``
and ``changed`` report and what ``read_texts`` returns, whatever holds the files."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Protocol

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.core.errors import FileUnreadable
from codebase_mcp_search.core.models import utcnow
from codebase_mcp_search.core.ports import SourceTree


class Files(Protocol):
    def write(self, path: str, data: str) -> None: ...
    def remove(self, path: str) -> None: ...


@dataclass
class Tree:
    source: SourceTree
    root: str
    files: Files


class _MemoryFiles:
    def __init__(self, tree: InMemorySourceTree, root: str) -> None:
        self._tree, self._root = tree, root

    def write(self, path: str, data: str) -> None:
        self._tree.put(self._root, path, data)

    def remove(self, path: str) -> None:
        self._tree.remove(self._root, path)


class _DiskFiles:
    def __init__(self, root: Path) -> None:
        self._root = root

    def write(self, path: str, data: str) -> None:
        target = self._root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data)

    def remove(self, path: str) -> None:
        (self._root / path).unlink()


@pytest.fixture(params=["filesystem", "memory"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tree]:
    if request.param == "memory":
        memory = InMemorySourceTree()
        yield Tree(memory, "/repo", _MemoryFiles(memory, "/repo"))
    else:
        root = tmp_path / "repo"
        root.mkdir()
        yield Tree(LocalSourceTree(), str(root), _DiskFiles(root))


async def _indexed(tree: Tree) -> dict[str, str]:
    scan = await tree.source.scan(tree.root)
    return {f.path: f.content_hash for f in scan.files}


async def test_nothing_changed(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    tree.files.write("pkg/b.py", "y = 2\n")
    indexed = await _indexed(tree)
    assert await tree.source.changed(tree.root, indexed, None) == set()
    assert await tree.source.changed(tree.root, indexed, utcnow()) == set()


async def test_edited_and_deleted_files_are_changed(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    tree.files.write("pkg/b.py", "y = 2\n")
    tree.files.write("c.py", "z = 3\n")
    indexed = await _indexed(tree)
    began = utcnow() - timedelta(seconds=60)
    tree.files.write("a.py", "x = 10\n")
    tree.files.remove("pkg/b.py")
    for since in (None, began):
        assert await tree.source.changed(tree.root, indexed, since) == {"a.py", "pkg/b.py"}


async def test_rewritten_with_the_same_bytes_is_unchanged(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    indexed = await _indexed(tree)
    tree.files.write("a.py", "x = 1\n")
    assert await tree.source.changed(tree.root, indexed, utcnow() - timedelta(hours=1)) == set()


async def test_only_the_files_asked_about(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    tree.files.write("b.py", "y = 2\n")
    indexed = await _indexed(tree)
    tree.files.write("b.py", "y = 3\n")
    assert await tree.source.changed(tree.root, {"a.py": indexed["a.py"]}, None) == set()
    assert await tree.source.changed(tree.root, {"gone.py": "0" * 64}, None) == {"gone.py"}


async def test_touched_is_every_file_that_may_have_changed(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    tree.files.write("b.py", "y = 2\n")
    tree.files.write("c.py", "z = 3\n")
    indexed = await _indexed(tree)
    paths = [*indexed, "never.py"]
    # Nothing modified since a moment after the writes: only the file that never was.
    later = utcnow() + timedelta(seconds=60)
    assert await tree.source.touched(tree.root, paths, later) == {"never.py"}
    # Without a time, every file may differ from what was indexed.
    assert await tree.source.touched(tree.root, paths, None) == set(paths)
    began = utcnow() - timedelta(seconds=60)
    tree.files.write("a.py", "x = 10\n")
    tree.files.write("b.py", "y = 2\n")  # the same bytes: touched, not changed
    tree.files.remove("c.py")
    touched = await tree.source.touched(tree.root, indexed, began)
    assert touched >= {"a.py", "b.py", "c.py"}
    assert await tree.source.changed(tree.root, indexed, began) == {"a.py", "c.py"}
    assert await tree.source.touched("/no/such/root", ["a.py"], later) == {"a.py"}


async def test_touched_answers_alike_for_few_and_many_files(tree: Tree) -> None:
    # A search asks about its few hits' files, a re-check about many: one answer for both.
    names = [f"m{i:02d}.py" for i in range(48)]
    for name in names:
        tree.files.write(name, f"v = {name!r}\n")
    indexed = await _indexed(tree)
    began = utcnow() - timedelta(seconds=60)
    later = utcnow() + timedelta(seconds=60)
    tree.files.write("m03.py", "v = 'edited'\n")
    tree.files.remove("m40.py")
    for paths in (names[:5], names):
        assert await tree.source.touched(tree.root, paths, later) == (
            {"m40.py"} if "m40.py" in paths else set()
        )
        assert await tree.source.touched(tree.root, paths, None) == set(paths)
    assert {"m03.py", "m40.py"} <= await tree.source.touched(tree.root, names, began)
    assert await tree.source.changed(tree.root, indexed, began) == {"m03.py", "m40.py"}


async def test_a_missing_root_changes_everything(tree: Tree) -> None:
    assert await tree.source.changed("/no/such/root", {"a.py": "0" * 64}, None) == {"a.py"}


async def test_read_texts_returns_each_text_in_order_and_unreadable_files_in_place(
    tree: Tree,
) -> None:
    tree.files.write("a.py", "x = 1\r\ny = 2\n")
    tree.files.write("pkg/b.py", "z = 3\n")
    texts = await tree.source.read_texts(tree.root, ["pkg/b.py", "gone.py", "a.py"])
    assert texts[0] == "z = 3\n"
    assert isinstance(texts[1], FileUnreadable)
    assert "gone.py" in texts[1].message
    assert texts[2] == "x = 1\ny = 2\n"  # as read_text gives it
    assert texts[2] == await tree.source.read_text(tree.root, "a.py")
    with pytest.raises(FileUnreadable):
        await tree.source.read_text(tree.root, "gone.py")
