"""The ``codebase-mcp`` command line, in-process and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_mcp_search.entrypoints.cli.main import main

SAMPLE = {
    "src/auth/passwords.py": '''import hashlib


def hash_password(password: str, salt: bytes) -> str:
    """Derive a storable hash of a password with PBKDF2."""
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 100_000).hex()


def verify_password(password: str, salt: bytes, expected: str) -> bool:
    return hash_password(password, salt) == expected
''',
    "src/web/routes.ts": """export function registerRoutes(app: App): void {
  app.get("/health", (req, res) => res.send("ok"));
}
""",
    "docs/guide.md": "# Guide\n\nPasswords are hashed with PBKDF2 before storage.\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "sample"
    for rel, text in SAMPLE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_search_with_index_prints_json(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "hash a password", "--index", str(repo), "--json", "--limit", "3"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["mode"] == "lexical" and payload["total_count"] >= 2
    top = payload["results"][0]
    assert top["file_path"] == "src/auth/passwords.py" and top["symbol"] == "hash_password"
    assert {
        "chunk_id",
        "content",
        "start_line",
        "end_line",
        "similarity_score",
        "context_before",
        "context_after",
        "repository_id",
    } <= set(top)


def test_search_filters(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "password health", "--index", str(repo), "--json", "--file-type", "ts"])
    assert code == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["file_path"] for r in results] == ["src/web/routes.ts"]


def test_index_json(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(repo), "--json", "--name", "demo"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["files_indexed"] == 3 and payload["status"] == "success"
    assert (
        payload["repository_name"] == "demo"
        and payload["project_id"] == os.environ["CODEBASE_MCP_PROJECT"]
    )


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["index", "/definitely/not/here"], 2, "VALIDATION_ERROR: path="),
        (
            ["search", "x", "--limit", "0"],
            2,
            "INVALID_LIMIT: --limit must be between 1 and 50, got 0",
        ),
        (["search", "   "], 2, "VALIDATION_ERROR: query="),
        (["search", "x", "--mode", "fuzzy"], 2, "VALIDATION_ERROR"),
        (["search", "x", "--project", "bad/id"], 2, "VALIDATION_ERROR: --project="),
    ],
)
def test_bad_input_is_one_line_and_nonzero(
    argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_not_a_directory(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(repo / "docs" / "guide.md")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_console_script_end_to_end(repo: Path) -> None:
    exe = Path(sys.executable).with_name("codebase-mcp")
    env = {**os.environ, "CODEBASE_MCP_EMBEDDER": "hash"}
    proc = subprocess.run(
        [str(exe), "search", "verify a password against the stored hash", "--index", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "src/auth/passwords.py" in proc.stdout and "hybrid search" in proc.stdout


def test_cli_chunks_in_worker_processes_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codebase_mcp_search.core import defaults
    from codebase_mcp_search.entrypoints.cli.main import _settings
    from codebase_mcp_search.entrypoints.settings import Settings

    monkeypatch.delenv("CODEBASE_MCP_INDEX_WORKERS", raising=False)
    assert Settings().index_workers == defaults.index_workers() >= 1  # a library process too
    assert _settings().index_workers == defaults.index_workers()
    monkeypatch.setenv("CODEBASE_MCP_INDEX_WORKERS", "1")
    assert _settings().index_workers == 1


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_a_closed_stdout_ends_the_command_with_141(repo: Path, output: list[str]) -> None:
    """``search ... | head`` when the reader has gone before the answer is written: exit
    141, as a shell pipeline reports SIGPIPE, with no traceback."""
    exe = Path(sys.executable).with_name("codebase-mcp")
    env = {**os.environ, "CODEBASE_MCP_EMBEDDER": "hash"}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte
    try:
        proc = subprocess.run(
            [str(exe), "search", "hash a password", "--index", str(repo), *output],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr


def test_version_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"codebase-mcp {version('codebase-mcp-search')}\n"
