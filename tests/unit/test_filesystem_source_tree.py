"""LocalSourceTree against real temporary directory trees."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import pwd
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.core.errors import FileUnreadable, ValidationFailed
from codebase_mcp_search.core.models import ScanResult
from codebase_mcp_search.core.ports import SourceTree


def write(root: Path, rel: str, content: str | bytes = "print('hi')\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


async def scan(root: Path, **options: object) -> ScanResult:
    return await LocalSourceTree(**options).scan(str(root))  # type: ignore[arg-type]


async def paths(root: Path, **options: object) -> set[str]:
    result = await scan(root, **options)
    assert result.errors == []
    return {f.path for f in result.files}


def test_implements_the_port() -> None:
    assert isinstance(LocalSourceTree(), SourceTree)


async def test_entries_are_relative_sorted_and_hashed(tmp_path: Path) -> None:
    contents = {
        "src/pkg/mod.py": b"def f():\n    return 1\n",
        "README.md": b"# title\n",
        "Makefile": b"all:\n\ttrue\n",
        "src/empty.txt": b"",
        ".github/workflows/ci.yml": b"on: push\n",
        "notes": b"no extension\n",
    }
    for rel, data in contents.items():
        write(tmp_path, rel, data)

    result = await scan(tmp_path)

    assert [f.path for f in result.files] == sorted(contents)
    by_path = {f.path: f for f in result.files}
    for rel, data in contents.items():
        assert by_path[rel].size == len(data)
        assert by_path[rel].content_hash == hashlib.sha256(data).hexdigest()
    assert by_path["src/pkg/mod.py"].language == "python"
    assert by_path["Makefile"].language == "make"
    assert by_path["notes"].language is None
    assert result.errors == []


async def test_relative_root_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "repo/a.py")
    monkeypatch.chdir(tmp_path)
    assert {f.path for f in (await LocalSourceTree().scan("repo")).files} == {"a.py"}
    assert await LocalSourceTree().read_text("repo", "a.py") == "print('hi')\n"


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
async def test_root_must_be_an_existing_directory(tmp_path: Path, kind: str) -> None:
    root = {"missing": str(tmp_path / "nope"), "file": str(write(tmp_path, "f.py")), "empty": ""}
    with pytest.raises(ValidationFailed, match="existing directory") as info:
        await LocalSourceTree().scan(root[kind])
    assert info.value.field == "repo_path"
    with pytest.raises(ValidationFailed, match="existing directory"):
        await LocalSourceTree().read_text(root[kind], "f.py")


async def test_nested_gitignore_negation_and_directory_patterns(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n*.txt\ncache/\ngen/*\n!gen/keep.py\nvendor/\n")
    write(tmp_path, "sub/.gitignore", "!important.log\n!*.txt\n/local.py\n")
    for rel in [
        "a.log",
        "a.txt",
        "local.py",
        "cache/x.py",
        "sub/cache/y.py",
        "other/cache",
        "gen/x.py",
        "gen/keep.py",
        "vendor/keep.py",
        "sub/b.log",
        "sub/important.log",
        "sub/a.txt",
        "sub/local.py",
        "sub/deeper/local.py",
    ]:
        write(tmp_path, rel)
    # Negating a file below an ignored directory does not re-include it, as in git.
    write(tmp_path, "vendor/.gitignore", "!keep.py\n")

    assert await paths(tmp_path) == {
        ".gitignore",
        "sub/.gitignore",
        "local.py",
        "other/cache",
        "gen/keep.py",
        "sub/important.log",
        "sub/a.txt",
        "sub/deeper/local.py",
    }


async def test_ignore_files_take_precedence_over_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.gen.py\n")
    write(tmp_path, "sub/.gitignore", "*.gen.py\n")
    write(tmp_path, ".ignore", "!keep.gen.py\nscratch/\n")
    for rel in ["a.gen.py", "keep.gen.py", "sub/keep.gen.py", "sub/b.gen.py", "scratch/x.py"]:
        write(tmp_path, rel)

    assert await paths(tmp_path) == {
        ".gitignore",
        ".ignore",
        "sub/.gitignore",
        "keep.gen.py",
        "sub/keep.gen.py",
    }


async def test_git_info_exclude_applies_below_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "local/\n*.scratch\n")
    write(tmp_path, ".git/config", "[core]\n")
    write(tmp_path, ".gitignore", "!keep.scratch\n")
    for rel in ["local/a.py", "a.scratch", "keep.scratch", "main.py"]:
        write(tmp_path, rel)

    assert await paths(tmp_path) == {".gitignore", "keep.scratch", "main.py"}


async def test_builtin_excludes_cannot_be_reincluded_by_ignore_files(tmp_path: Path) -> None:
    excluded = [
        ".hg/store.py",
        ".svn/entries.py",
        "node_modules/lib/index.js",
        "web/node_modules/x.js",
        ".venv/lib/site.py",
        "venv/lib/site.py",
        "__pypackages__/3.11/lib/x.py",
        "src/__pycache__/mod.py",
        ".mypy_cache/x.json",
        ".pytest_cache/README.md",
        ".ruff_cache/x.txt",
        ".tox/py311/x.py",
        ".nox/tests/x.py",
        "dist/pkg.py",
        "build/lib/x.py",
        "target/debug/x.rs",
        "out/x.js",
        ".next/x.js",
        "coverage/index.html",
        ".gradle/x.txt",
    ]
    for rel in excluded:
        write(tmp_path, rel)
    write(tmp_path, "env/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "env/lib/site.py")
    write(tmp_path, "tools/myenv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "tools/myenv/x.py")
    # The whitelist idiom must not drag dependency trees back in.
    write(tmp_path, ".gitignore", "*\n!*/\n!*.py\n!*.js\n!*.rs\n!.gitignore\n")
    write(tmp_path, "env2/site.py")
    write(tmp_path, "scripts/build.py")
    write(tmp_path, "main.py")

    assert await paths(tmp_path) == {".gitignore", "env2/site.py", "scripts/build.py", "main.py"}


async def test_lock_files_are_skipped(tmp_path: Path) -> None:
    locks = [
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Cargo.lock",
        "uv.lock",
        "composer.lock",
        "Gemfile.lock",
        "go.sum",
        "web/package-lock.json",
    ]
    for rel in [*locks, "package.json", "go.mod", "pyproject.toml"]:
        write(tmp_path, rel, "{}\n")

    assert await paths(tmp_path) == {"package.json", "go.mod", "pyproject.toml"}


async def test_minified_files_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "app.min.js", "var a=1;\n")
    write(tmp_path, "style.min.css", "a{b:c}\n")
    write(tmp_path, "app.js.map", "{}\n")
    write(tmp_path, "bundle.js", "var a=1;" * 1000)
    write(tmp_path, "classic_mac.js", "var a = 1;\r" * 500)
    write(tmp_path, "normal.js", "const answer = compute(42); // a comment\n" * 500)
    write(tmp_path, "one_line.json", '{"key": "' + "v" * 600 + '"}')

    assert await paths(tmp_path) == {"classic_mac.js", "normal.js", "one_line.json"}


async def test_binaries_are_sniffed_by_content(tmp_path: Path) -> None:
    write(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(tmp_path, "late_nul.py", b"x = 1\n" * 1500 + b"\x00")
    write(tmp_path, "blob.py", bytes([0x01, 0x02, 0xFF, 0xFE, 0x03]) * 400)
    write(tmp_path, "latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    # Valid UTF-8 full of control bytes, with a character split by the 8 KiB sniff boundary.
    lines = b"\x01" * 1000 + (b"a" * 79 + b"\n") * 89 + b"a" * 71
    assert len(lines) == 8191
    write(tmp_path, "controls.txt", lines + "é".encode() + b"\n")
    write(tmp_path, "ansi.log.txt", b"\x1b[31mred\x1b[0m\n" * 100)

    found = await paths(tmp_path)

    # A NUL after the first 8 KiB is not looked for.
    assert found == {"late_nul.py", "latin1.txt", "controls.txt", "ansi.log.txt"}


async def test_files_over_the_size_limit_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "fits.py", b"#" * 99 + b"\n")
    write(tmp_path, "too_big.py", b"#" * 100 + b"\n")

    assert await paths(tmp_path, max_file_bytes=100) == {"fits.py"}


SECRETS = [
    ".env",
    ".env.local",
    "config/.env.production",
    "certs/server.pem",
    "certs/server.key",
    "certs/client.p12",
    "certs/client.pfx",
    "android/release.keystore",
    ".ssh/id_rsa",
    ".ssh/id_ed25519",
    ".ssh/id_ecdsa_old",
    ".ssh/id_dsa",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    "gcp/credentials-prod.json",
    ".aws/credentials",
    "secrets.yaml",
    "secrets.yml",
    "secrets.json",
    "secrets.toml",
]
NOT_SECRETS = [
    ".env.example",
    ".env.sample",
    ".env.template",
    ".ssh/id_rsa.pub",
    ".aws/config",
    "secrets.py",
    "pem_parser.py",
]


async def test_likely_secrets_are_skipped_unless_allowed(tmp_path: Path) -> None:
    for rel in [*SECRETS, *NOT_SECRETS]:
        write(tmp_path, rel, "value\n")
    write(tmp_path, "deploy/notes.txt", "\n-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n")
    write(tmp_path, "pem_parser.py", 'MARKER = "-----BEGIN RSA PRIVATE KEY-----"\n')

    assert await paths(tmp_path) == set(NOT_SECRETS)
    assert await paths(tmp_path, allow_secrets=True) == {
        *SECRETS,
        *NOT_SECRETS,
        "deploy/notes.txt",
    }


async def test_symlinks_never_escape_the_root_or_loop(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    write(outside, "leak.py", "leaked = True\n")
    write(root, "src/real.py", "x = 1\n")
    write(root, ".git/config", "[core]\n")
    (root / "src/loop").symlink_to("..", target_is_directory=True)
    (root / "src/alias_dir").symlink_to(root / "src", target_is_directory=True)
    (root / "outside_dir").symlink_to(outside, target_is_directory=True)
    (root / "leak.py").symlink_to(outside / "leak.py")
    (root / "alias.py").symlink_to("src/real.py")
    (root / "dangling.py").symlink_to("missing.py")
    (root / "ping.py").symlink_to("pong.py")
    (root / "pong.py").symlink_to("ping.py")
    (root / "gitconfig.txt").symlink_to(".git/config")
    (root / "secret_link.txt").symlink_to("src/.env")
    write(root, "src/.env", "TOKEN=x\n")

    result = await scan(root)

    assert result.errors == []
    assert {f.path: f.content_hash for f in result.files} == {
        "alias.py": hashlib.sha256(b"x = 1\n").hexdigest(),
        "src/real.py": hashlib.sha256(b"x = 1\n").hexdigest(),
    }
    assert await LocalSourceTree().read_text(str(root), "alias.py") == "x = 1\n"
    with pytest.raises(FileUnreadable, match="outside the repository"):
        await LocalSourceTree().read_text(str(root), "leak.py")


async def test_fifos_and_other_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "pipe_link.py").symlink_to("pipe.py")
    write(tmp_path, "main.py")

    assert await paths(tmp_path) == {"main.py"}
    with pytest.raises(FileUnreadable, match="not a regular file"):
        await LocalSourceTree().read_text(str(tmp_path), "pipe.py")


@contextlib.contextmanager
def permissions_enforced(tree: Path) -> Iterator[None]:
    """Run the body where mode bits deny access: as root, under the effective uid of nobody."""
    if os.geteuid() != 0:
        yield
        return
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        uid = 65534
    for path in (tree, *tree.rglob("*")):
        os.lchown(path, uid, uid)
    try:
        os.seteuid(uid)
    except PermissionError:
        pytest.skip("running as root without CAP_SETUID: cannot make a file unreadable")
    try:
        try:
            os.listdir(tree)
        except PermissionError:
            pytest.skip("the temporary directory is not reachable by an unprivileged user")
        yield
    finally:
        os.seteuid(0)


async def test_unreadable_files_and_directories_are_reported_not_fatal() -> None:
    # Not tmp_path: as root, its parent directories are closed to the unprivileged user.
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write(root, "ok.py")
        locked = write(root, "locked.py")
        write(root, "closed/inner.py")
        locked.chmod(0)
        (root / "closed").chmod(0)
        try:
            with permissions_enforced(root):
                result = await scan(root)
                with pytest.raises(FileUnreadable, match=r"locked\.py: Permission denied"):
                    await LocalSourceTree().read_text(str(root), "locked.py")
        finally:
            locked.chmod(0o600)
            (root / "closed").chmod(0o700)

    assert [f.path for f in result.files] == ["ok.py"]
    assert [(e.path, e.error) for e in result.errors] == [
        ("closed", "Permission denied"),
        ("locked.py", "Permission denied"),
    ]


async def test_extra_excludes_use_gitignore_syntax(tmp_path: Path) -> None:
    for rel in ["docs/a.md", "src/a.py", "src/gen_a.py", "src/gen_keep.py", "fixtures/x.json"]:
        write(tmp_path, rel)

    found = await paths(tmp_path, extra_excludes=["docs/", "gen_*.py", "!gen_keep.py", "/fixtures"])

    assert found == {"src/a.py", "src/gen_keep.py"}


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValidationFailed, match="one string"):
        LocalSourceTree(extra_excludes="*.py")
    with pytest.raises(ValidationFailed, match="positive"):
        LocalSourceTree(max_file_bytes=0)


async def test_read_text_normalises_line_endings_and_strips_a_bom(tmp_path: Path) -> None:
    write(tmp_path, "crlf.py", b"a = 1\r\nb = 2\r\n")
    write(tmp_path, "cr.py", b"a = 1\rb = 2\r")
    write(tmp_path, "bom.py", b"\xef\xbb\xbfa = 1\r\n")
    tree = LocalSourceTree()

    assert await tree.read_text(str(tmp_path), "crlf.py") == "a = 1\nb = 2\n"
    assert await tree.read_text(str(tmp_path), "cr.py") == "a = 1\nb = 2\n"
    assert await tree.read_text(str(tmp_path), "bom.py") == "a = 1\n"


async def test_read_text_raises_file_unreadable(tmp_path: Path) -> None:
    write(tmp_path, "latin1.py", "s = 'caf\xe9'\n".encode("latin-1"))
    (tmp_path / "adir").mkdir()
    tree = LocalSourceTree()

    with pytest.raises(FileUnreadable, match=r"latin1\.py: not valid UTF-8") as info:
        await tree.read_text(str(tmp_path), "latin1.py")
    assert info.value.code == "FILE_UNREADABLE"
    with pytest.raises(FileUnreadable, match=r"missing\.py: No such file"):
        await tree.read_text(str(tmp_path), "missing.py")
    with pytest.raises(FileUnreadable, match="adir"):
        await tree.read_text(str(tmp_path), "adir")


@pytest.mark.parametrize("path", ["../x.py", "a/../../x.py", "/etc/passwd", "", "a\0b"])
async def test_read_text_refuses_paths_outside_the_root(tmp_path: Path, path: str) -> None:
    with pytest.raises(ValidationFailed, match="relative path inside the repository"):
        await LocalSourceTree().read_text(str(tmp_path), path)


LINE = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00\ufeff"),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(LINE, max_size=8), eol=st.sampled_from(["\n", "\r\n", "\r"]), bom=st.booleans()
)
def test_any_nul_free_text_is_scanned_and_read_back(lines: list[str], eol: str, bom: bool) -> None:
    data = ("\ufeff" if bom else "").encode() + eol.join(lines).encode()
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), "f.txt", data)
        tree = LocalSourceTree()
        result = asyncio.run(tree.scan(tmp))
        text = asyncio.run(tree.read_text(tmp, "f.txt"))

    assert [(f.path, f.content_hash) for f in result.files] == [
        ("f.txt", hashlib.sha256(data).hexdigest())
    ]
    assert text == "\n".join(lines)


async def test_changed_sees_backdated_edits_links_and_oversized_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "b.py").write_text("y = 1\n")
    (root / "big.py").write_text("z = 1\n")
    tree = LocalSourceTree(max_file_bytes=64)
    indexed = {f.path: f.content_hash for f in (await tree.scan(str(root))).files}
    since = datetime.now(UTC)

    # Edited, then its mtime set back to before the run (as some tools do): the change time
    # cannot be set back, so the edit is still seen.
    (root / "a.py").write_text("x = 2\n")
    old = since.timestamp() - 3600
    os.utime(root / "a.py", (old, old))
    # Swapped for a link to an older file outside the root: the link's own times count.
    outside = tmp_path / "outside.py"
    outside.write_text("y = 1\n")
    os.utime(outside, (old, old))
    (root / "b.py").unlink()
    (root / "b.py").symlink_to(outside)
    # Grown past the size limit: the scan would drop it, so it is changed (and not read).
    (root / "big.py").write_text("z = 1\n" * 100)

    assert await tree.changed(str(root), indexed, since) == {"a.py", "b.py", "big.py"}
