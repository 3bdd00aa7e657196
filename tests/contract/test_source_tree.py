"""SourceTree contract, on the in-memory tree and on the local filesystem: what ``scan`` leaves
out and reports, what ``touched`` and ``changed`` report and what ``read_texts`` returns,
whatever holds the files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree, PathspecIgnoreRules
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.core.errors import Cancelled, FileUnreadable
from codebase_mcp_search.core.models import SkipReason, sha256_hex, utcnow
from codebase_mcp_search.core.ports import SourceTree


class Files(Protocol):
    def write(self, path: str, data: str | bytes) -> None: ...
    def remove(self, path: str) -> None: ...


@dataclass
class Tree:
    source: SourceTree
    root: str
    files: Files
    build: Callable[..., SourceTree]

    def configure(self, **options: Any) -> None:
        """A source tree with ``options`` (as the constructors take them) over the same files
        takes the place of ``source``."""
        self.source = self.build(**options)


class _MemoryFiles:
    """Files written to the current in-memory tree, and kept to build another from."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._files: dict[str, bytes] = {}
        self._tree = self.build()

    def build(self, **options: Any) -> InMemorySourceTree:
        # A memory tree matches ignore files through the port it is given, like the
        # container's local tree through its default.
        self._tree = InMemorySourceTree(
            {self._root: self._files}, ignore_rules=PathspecIgnoreRules(), **options
        )
        return self._tree

    def write(self, path: str, data: str | bytes) -> None:
        self._files[path] = data.encode() if isinstance(data, str) else data
        self._tree.put(self._root, path, data)

    def remove(self, path: str) -> None:
        del self._files[path]
        self._tree.remove(self._root, path)


class _DiskFiles:
    def __init__(self, root: Path) -> None:
        self._root = root

    def write(self, path: str, data: str | bytes) -> None:
        target = self._root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def remove(self, path: str) -> None:
        (self._root / path).unlink()


@pytest.fixture(params=["filesystem", "memory"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tree]:
    if request.param == "memory":
        files = _MemoryFiles("/repo")
        yield Tree(files.build(), "/repo", files, files.build)
    else:
        root = tmp_path / "repo"
        root.mkdir()
        yield Tree(LocalSourceTree(), str(root), _DiskFiles(root), LocalSourceTree)


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


# --- What a scan leaves out: the core's skip policy, applied by every tree alike ----------

KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


async def _outcome(tree: Tree) -> tuple[list[str], dict[str, SkipReason]]:
    """The paths a scan indexes, and what it leaves out with each reason."""
    scan = await tree.source.scan(tree.root)
    assert scan.errors == []
    return [f.path for f in scan.files], {s.path: s.reason for s in scan.skipped}


LEFT_OUT: list[tuple[str, str | bytes, SkipReason]] = [
    (".env", "TOKEN=x\n", SkipReason.SECRET),
    ("deploy/id_rsa", "not even a key\n", SkipReason.SECRET),
    ("certs/Server.PEM", "cert\n", SkipReason.SECRET),
    ("home/.aws/credentials", "[default]\n", SkipReason.SECRET),
    ("keys/backup.txt", "\n" + KEY, SkipReason.SECRET),  # a key by another name
    ("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", SkipReason.BINARY),
    ("blob.dat", bytes([0x01, 0x02, 0xFF, 0xFE, 0x03]) * 400, SkipReason.BINARY),
    ("app.min.js", "var a=1;", SkipReason.MINIFIED),
    ("app.js.map", "{}", SkipReason.MINIFIED),
    ("bundle.js", "var a=1;" * 400, SkipReason.MINIFIED),
    ("package-lock.json", "{}", SkipReason.LOCK_FILE),
    ("web/yarn.lock", "# lock\n", SkipReason.LOCK_FILE),
    ("big.py", "x = 1\n" * 1000, SkipReason.TOO_LARGE),
]


@pytest.mark.parametrize(("rel", "content", "reason"), LEFT_OUT, ids=[rel for rel, *_ in LEFT_OUT])
async def test_each_file_left_out_is_reported_with_its_reason(
    tree: Tree, rel: str, content: str | bytes, reason: SkipReason
) -> None:
    tree.files.write("kept.py", "x = 1\n")
    tree.files.write(rel, content)
    tree.configure(max_file_bytes=5000)
    assert await _outcome(tree) == (["kept.py"], {rel: reason})


async def test_a_script_without_a_known_name_takes_its_language_from_its_first_line(
    tree: Tree,
) -> None:
    tree.files.write("bin/deploy", "#!/usr/bin/env bash\nset -e\n")
    tree.files.write("bin/notes", "deploy steps\n")
    tree.files.write("bin/run.py", "#!/bin/sh\n")
    scan = await tree.source.scan(tree.root)
    languages = {f.path: f.language for f in scan.files}
    assert languages == {"bin/deploy": "bash", "bin/notes": None, "bin/run.py": "python"}


async def test_the_size_limit_is_inclusive(tree: Tree) -> None:
    tree.files.write("fits.py", "#" * 99 + "\n")
    tree.files.write("too_big.py", "#" * 100 + "\n")
    tree.configure(max_file_bytes=100)
    assert await _outcome(tree) == (["fits.py"], {"too_big.py": SkipReason.TOO_LARGE})


async def test_public_halves_and_mentions_of_secrets_are_kept(tree: Tree) -> None:
    kept = [".env.example", ".ssh/id_rsa.pub", "certs/server.pem.sample", ".aws/config"]
    for rel in kept:
        tree.files.write(rel, "value\n")
    # The marker in a string literal, not at a line start: a PEM parser is code.
    tree.files.write("pem_parser.py", 'MARKER = "-----BEGIN RSA PRIVATE KEY-----"\n')
    assert await _outcome(tree) == (sorted([*kept, "pem_parser.py"]), {})


async def test_allowed_secrets_are_indexed_and_not_reported(tree: Tree) -> None:
    secrets = [".env", ".aws/credentials", "deploy/id_ed25519", "key.txt"]
    for rel in secrets:
        tree.files.write(rel, KEY)
    tree.configure(allow_secrets=True)
    assert await _outcome(tree) == (sorted(secrets), {})


# A key's body as a test module embeds it (generated here, not a real key).
BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + "x" * 13, "c2VjcmV0Ym9keQ=="]
EMBEDDED = (
    "import ssl\n\n"
    'KEY = """\n-----BEGIN PRIVATE KEY-----\n' + "\n".join(BODY) + "\n-----END PRIVATE KEY-----\n"
    '"""\n\n\ndef load_key():\n    return KEY\n'
)


async def test_a_key_inside_a_kept_file_is_redacted_in_what_is_read(tree: Tree) -> None:
    tree.files.write("tests/test_tls.py", EMBEDDED)
    scan = await tree.source.scan(tree.root)
    assert [f.path for f in scan.files] == ["tests/test_tls.py"] and scan.skipped == []
    text = await tree.source.read_text(tree.root, "tests/test_tls.py")
    assert await tree.source.read_texts(tree.root, ["tests/test_tls.py"]) == [text]
    assert all(line not in text for line in BODY)
    assert text.splitlines()[4:6] == ["[redacted]", "[redacted]"]
    assert len(text.splitlines()) == len(EMBEDDED.splitlines())
    assert text.splitlines()[10:] == ["def load_key():", "    return KEY"]
    # The hash is of the bytes as read: unchanged, though not the raw bytes' hash.
    indexed = {f.path: f.content_hash for f in scan.files}
    assert indexed["tests/test_tls.py"] == sha256_hex(text)
    assert await tree.source.changed(tree.root, indexed, None) == set()


async def test_allowed_secrets_are_read_whole_and_hashed_apart(tree: Tree) -> None:
    tree.files.write("tests/test_tls.py", EMBEDDED)
    strict = await _indexed(tree)
    tree.configure(allow_secrets=True)
    assert await tree.source.read_text(tree.root, "tests/test_tls.py") == EMBEDDED
    allowed = await _indexed(tree)
    assert allowed["tests/test_tls.py"] == sha256_hex(EMBEDDED)
    # Turning the option on or off changes what is indexed: each sees the other's as changed.
    assert await tree.source.changed(tree.root, strict, None) == {"tests/test_tls.py"}
    tree.configure()
    assert await tree.source.changed(tree.root, allowed, None) == {"tests/test_tls.py"}


async def test_excluded_directories_are_pruned_as_one_entry_each(tree: Tree) -> None:
    tree.files.write("main.py", "x = 1\n")
    tree.files.write("node_modules/left-pad/index.js", "module.exports = 1\n")
    tree.files.write("web/node_modules/x.js", "x\n")
    tree.files.write("pkg/__pycache__/m.cpython-312.pyc", b"\0\0")
    tree.files.write("env3/pyvenv.cfg", "home = /usr/bin\n")  # a virtualenv by another name
    tree.files.write("env3/lib/site.py", "x\n")
    # VCS metadata is neither indexed nor reported: every checkout has it.
    tree.files.write(".git/config", "[core]\n")
    tree.files.write("sub/.hg/store.py", "x\n")
    # The whitelist idiom of an ignore file cannot bring them back.
    tree.files.write(".gitignore", "*\n!*/\n!*.py\n!*.js\n!.gitignore\n")
    assert await _outcome(tree) == (
        [".gitignore", "main.py"],
        {
            "env3/": SkipReason.EXCLUDED_DIR,
            "node_modules/": SkipReason.EXCLUDED_DIR,
            "pkg/__pycache__/": SkipReason.EXCLUDED_DIR,
            "web/node_modules/": SkipReason.EXCLUDED_DIR,
        },
    )


async def test_ignore_files_apply_with_their_precedence(tree: Tree) -> None:
    tree.files.write(".gitignore", "*.log\ngen/\n*.gen.py\n")
    tree.files.write("src/.ignore", "scratch.py\n!keep.gen.py\n")
    tree.files.write(".git/info/exclude", "local.py\n*.scratch\n")
    tree.files.write("sub/.gitignore", "!keep.scratch\n!important.log\n")
    for rel in [
        "src/a.py",
        "src/scratch.py",
        "src/keep.gen.py",
        "other.gen.py",
        "run.log",
        "gen/out.py",
        "gen/deep/x.py",
        "local.py",
        "sub/a.scratch",
        "sub/keep.scratch",
        "sub/important.log",
    ]:
        tree.files.write(rel, "x = 1\n")
    # .ignore beats .gitignore, which beats .git/info/exclude; the nearest file decides; an
    # ignored directory is one entry.
    kept = [".gitignore", "src/.ignore", "src/a.py", "src/keep.gen.py", "sub/.gitignore"]
    assert await _outcome(tree) == (
        [*kept, "sub/important.log", "sub/keep.scratch"],
        {
            "gen/": SkipReason.IGNORED,
            "local.py": SkipReason.IGNORED,
            "other.gen.py": SkipReason.IGNORED,
            "run.log": SkipReason.IGNORED,
            "src/scratch.py": SkipReason.IGNORED,
            "sub/a.scratch": SkipReason.IGNORED,
        },
    )


async def test_a_secret_named_in_an_ignore_file_is_reported_as_a_secret(tree: Tree) -> None:
    tree.files.write(".gitignore", ".env\nyarn.lock\n")
    tree.files.write(".env", "TOKEN=x\n")
    tree.files.write("yarn.lock", "# lock\n")
    assert await _outcome(tree) == (
        [".gitignore"],
        {".env": SkipReason.SECRET, "yarn.lock": SkipReason.LOCK_FILE},
    )


async def test_extra_excludes_use_gitignore_syntax(tree: Tree) -> None:
    for rel in ["docs/a.md", "src/a.py", "src/gen_a.py", "src/gen_keep.py"]:
        tree.files.write(rel, "x\n")
    tree.configure(extra_excludes=["docs/", "gen_*.py", "!gen_keep.py"])
    assert await _outcome(tree) == (
        ["src/a.py", "src/gen_keep.py"],
        {"docs/": SkipReason.IGNORED, "src/gen_a.py": SkipReason.IGNORED},
    )


async def test_an_invalid_ignore_file_is_reported_and_applies_nothing(tree: Tree) -> None:
    tree.files.write(".gitignore", "*.log\n!\n")
    tree.files.write("run.log", "x\n")
    scan = await tree.source.scan(tree.root)
    assert [f.path for f in scan.files] == [".gitignore", "run.log"]
    assert [e.path for e in scan.errors] == [".gitignore"]
    assert scan.errors[0].error.startswith("invalid ignore pattern: ")


async def test_a_file_the_scan_would_leave_out_for_its_size_is_changed(tree: Tree) -> None:
    tree.files.write("a.py", "x = 1\n")
    indexed = await _indexed(tree)
    tree.configure(max_file_bytes=4)
    assert await tree.source.changed(tree.root, indexed, None) == {"a.py"}


async def test_a_scan_asks_between_entries_and_stops_once_cancelled(tree: Tree) -> None:
    for i in range(30):
        tree.files.write(f"pkg{i % 3}/mod_{i}.py", f"x = {i}\n")
    asked = 0

    def never() -> bool:
        nonlocal asked
        asked += 1
        return False

    assert len((await tree.source.scan(tree.root, never)).files) == 30
    assert asked >= 30  # at least once per file: a long walk stops soon after it is asked
    asked = 0

    def after_ten() -> bool:
        nonlocal asked
        asked += 1
        return asked > 10

    with pytest.raises(Cancelled):
        await tree.source.scan(tree.root, after_ten)
    assert asked == 11  # it stopped at the first answer that said so
