"""What LocalSourceTree's scan leaves out is recorded, each file (or pruned directory) with
its reason; real files in temporary directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_mcp_search.adapters.filesystem import LocalSourceTree
from codebase_mcp_search.core.models import ScanResult, SkipReason

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


def write(root: Path, rel: str, content: str | bytes = "print('hi')\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)


async def scan(root: Path, **options: object) -> ScanResult:
    return await LocalSourceTree(**options).scan(str(root))  # type: ignore[arg-type]


async def skipped(root: Path, **options: object) -> dict[str, SkipReason]:
    result = await scan(root, **options)
    assert result.errors == []
    return {s.path: s.reason for s in result.skipped}


@pytest.mark.parametrize(
    ("rel", "content", "reason"),
    [
        ("big.py", "x = 1\n" * 1000, SkipReason.TOO_LARGE),
        ("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", SkipReason.BINARY),
        ("app.min.js", "var a=1;", SkipReason.MINIFIED),
        ("bundle.js", "var a=1;" * 400, SkipReason.MINIFIED),
        ("app.js.map", "{}", SkipReason.MINIFIED),
        (".env", "TOKEN=x\n", SkipReason.SECRET),
        ("deploy/id_rsa", "not even a key\n", SkipReason.SECRET),
        ("keys/backup.txt", KEY, SkipReason.SECRET),
        ("package-lock.json", "{}", SkipReason.LOCK_FILE),
        ("web/yarn.lock", "# lock\n", SkipReason.LOCK_FILE),
    ],
)
async def test_each_file_reason(
    tmp_path: Path, rel: str, content: str | bytes, reason: SkipReason
) -> None:
    write(tmp_path, "kept.py")
    write(tmp_path, rel, content)
    result = await scan(tmp_path, max_file_bytes=5000)
    assert [f.path for f in result.files] == ["kept.py"]
    assert [(s.path, s.reason) for s in result.skipped] == [(rel, reason)]


async def test_ignored_files_and_pruned_directories(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\ngen/\n")
    write(tmp_path, "src/.ignore", "scratch.py\n")
    write(tmp_path, ".git/info/exclude", "local.py\n")
    for rel in ("src/a.py", "src/scratch.py", "run.log", "gen/out.py", "gen/deep/x.py", "local.py"):
        write(tmp_path, rel)
    write(tmp_path, "private/p.py")
    got = await skipped(tmp_path, extra_excludes=["private/"])
    # A pruned directory is one entry ending with "/", not one per file below it; the VCS
    # directory is not reported (every checkout has one).
    assert got == {
        "gen/": SkipReason.IGNORED,
        "local.py": SkipReason.IGNORED,
        "private/": SkipReason.IGNORED,
        "run.log": SkipReason.IGNORED,
        "src/scratch.py": SkipReason.IGNORED,
    }


async def test_excluded_directories_and_virtualenvs_by_another_name(tmp_path: Path) -> None:
    write(tmp_path, "main.py")
    write(tmp_path, "node_modules/left-pad/index.js", "module.exports = 1\n")
    write(tmp_path, "pkg/__pycache__/m.cpython-312.pyc", b"\0\0")
    write(tmp_path, "env3/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "env3/lib/site.py")
    assert await skipped(tmp_path) == {
        "env3/": SkipReason.EXCLUDED_DIR,
        "node_modules/": SkipReason.EXCLUDED_DIR,
        "pkg/__pycache__/": SkipReason.EXCLUDED_DIR,
    }


async def test_a_symlink_is_skipped_for_its_name_or_its_target(tmp_path: Path) -> None:
    write(tmp_path, "conf/.env", "TOKEN=x\n")
    write(tmp_path, "real.py")
    (tmp_path / "settings.txt").symlink_to(tmp_path / "conf" / ".env")
    (tmp_path / "yarn.lock").symlink_to(tmp_path / "real.py")
    assert await skipped(tmp_path) == {
        "conf/.env": SkipReason.SECRET,
        "settings.txt": SkipReason.SECRET,
        "yarn.lock": SkipReason.LOCK_FILE,
    }


async def test_allowed_secrets_are_indexed_and_not_reported(tmp_path: Path) -> None:
    write(tmp_path, ".env", "TOKEN=x\n")
    write(tmp_path, "key.txt", KEY)
    result = await scan(tmp_path, allow_secrets=True)
    assert result.skipped == [] and [f.path for f in result.files] == [".env", "key.txt"]


async def test_skipped_entries_are_sorted_by_path(tmp_path: Path) -> None:
    for rel in ("z/yarn.lock", "a/poetry.lock", "m/Cargo.lock"):
        write(tmp_path, rel, "x\n")
    result = await scan(tmp_path)
    assert [s.path for s in result.skipped] == ["a/poetry.lock", "m/Cargo.lock", "z/yarn.lock"]
