"""LocalSourceTree on disk and InMemorySourceTree over a dict of the same files give the same
``ScanResult``: files, errors and what was skipped, with the same reasons and paths."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.filesystem import LocalSourceTree, PathspecIgnoreRules
from codebase_mcp_search.adapters.memory import InMemorySourceTree

KEY = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"
# Directory and file names apart, so that no path is both (a dict could hold that, a disk not).
DIRS = ["src", "sub", "gen", "node_modules", "build", ".git", ".aws", "env", "docs", "info"]
FILES = ["a.py", "b.txt", "run.log", ".env", ".env.example", "id_rsa", "id_rsa.pub"]
FILES += ["yarn.lock", "app.min.js", "credentials", "pyvenv.cfg", "keep.log", "x.md"]
IGNORE_FILES = [".gitignore", ".ignore"]
PATTERNS = ["*.log", "!keep.log", "gen/", "*.txt", "!b.txt", "/a.py", "src/", "*", "!*/"]
PATTERNS += ["!*.py", "docs", "# note", "", "sub/*.md", "**/info/", "!"]
CONTENTS = st.sampled_from(
    [
        b"x = 1\n",
        b"",
        KEY,
        b"a key:\n" + KEY,
        b"\x89PNG\r\n\x1a\n\0\0",
        b"var a=1;" * 400,
        b"line\n" * 40,
        "caf\xe9\n".encode("latin-1"),
    ]
)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, bytes]:
    def patterns() -> bytes:
        return "\n".join(draw(st.lists(st.sampled_from(PATTERNS), max_size=4))).encode()

    files: dict[str, bytes] = {}
    for _ in range(draw(st.integers(1, 14))):
        dirs = draw(st.lists(st.sampled_from(DIRS), max_size=3))
        name = draw(st.sampled_from(FILES + IGNORE_FILES))
        files["/".join([*dirs, name])] = patterns() if name in IGNORE_FILES else draw(CONTENTS)
    if draw(st.booleans()):
        files[".git/info/exclude"] = patterns()
    return files


OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "max_file_bytes": st.sampled_from([8, 100, 5000]),
        "allow_secrets": st.booleans(),
        "extra_excludes": st.lists(st.sampled_from(["*.md", "!x.md", "sub/", "env"]), max_size=2),
    },
)


@settings(max_examples=60, deadline=None)
@given(files=trees(), options=OPTIONS)
def test_both_trees_scan_the_same_files_alike(files: dict[str, bytes], options: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for rel, data in files.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        on_disk = asyncio.run(LocalSourceTree(**options).scan(tmp))
    memory = InMemorySourceTree({tmp: files}, ignore_rules=PathspecIgnoreRules(), **options)
    assert asyncio.run(memory.scan(tmp)) == on_disk
