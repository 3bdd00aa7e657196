"""``codebase-mcp watch PATH`` and a watching ``codebase-mcp worker``: indexes kept fresh with
no MCP server (issue 37), real processes on the test's Postgres."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from codebase_mcp_search.entrypoints.cli.main import main
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.integration.test_job_workers import CLI
from tests.integration.test_mcp_server import call
from tests.integration.test_mcp_watch import write_module

DEADLINE_S = 60.0


async def found(word: str) -> set[str]:
    async with open_codebase(Settings(embedder="none")) as cb:
        result = await cb.search(word, mode="lexical", limit=20)
    return {h.file_path for h in result.hits if word in h.content}


def text_of(log: Path) -> str:
    return log.read_text()


async def until_found(word: str, files: set[str], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while await found(word) != files:
        assert proc.poll() is None, text_of(log)
        assert time.monotonic() < deadline, (word, text_of(log))
        await asyncio.sleep(0.2)


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, CODEBASE_MCP_WATCH="true")
    with log.open("wb") as out:
        return subprocess.Popen(
            [CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
        )


async def test_watch_indexes_a_new_root_then_what_changes(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    log = tmp_path / "watch.log"
    proc = start(["watch", str(root)], log)
    try:
        await until_found("steady_base_helper", {"pkg/base.py"}, proc, log)  # indexed first
        write_module(root, "pkg/fresh.py", "fresh_otter_loader")
        await until_found("fresh_otter_loader", {"pkg/fresh.py"}, proc, log)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()
    assert "stopped watching" in log.read_text()


async def test_a_worker_watches_the_indexed_repositories(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    async with open_codebase(Settings(embedder="none")) as cb:
        await cb.index(root)
    log = tmp_path / "worker.log"
    proc = start(["worker"], log)
    try:
        write_module(root, "pkg/fresh.py", "fresh_otter_loader")
        await until_found("fresh_otter_loader", {"pkg/fresh.py"}, proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    assert "watching every indexed repository" in log.read_text()


def test_watch_refuses_a_path_that_is_no_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["watch", str(tmp_path / "nope")])
    assert code != 0
    err = capsys.readouterr().err
    assert err.startswith("VALIDATION_ERROR: ") and "PATH" in err and "directory" in err


def test_doctor_says_how_watching_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no repository indexed: doctor tries the current directory
    assert main(["doctor"]) == 0
    assert "watching  off (CODEBASE_MCP_WATCH=false)" in capsys.readouterr().out
    monkeypatch.setenv("CODEBASE_MCP_WATCH", "true")
    assert main(["doctor", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["watching"] == {"enabled": True, "mode": "native"}
    assert main(["doctor"]) == 0
    assert "watching  on: the file system's change events (native)" in capsys.readouterr().out
    monkeypatch.setenv("CODEBASE_MCP_WATCH_POLLING", "true")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "watching  on: polling" in out and "CODEBASE_MCP_WATCH_POLLING" in out


async def test_serve_no_watch_turns_watching_off(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    env = dict(os.environ, CODEBASE_MCP_WATCH="true", CODEBASE_MCP_EMBEDDER="hash")
    for flags, expected in (([], "native"), (["--no-watch"], None)):
        async with Client(StdioTransport(CLI, ["serve", *flags], env=env)) as c:
            await call(c, "index_repository", repo_path=str(root))
            deadline = time.monotonic() + DEADLINE_S
            if expected is None:
                await asyncio.sleep(3)  # a watcher would be reported by now
            while True:
                [repo] = (await call(c, "list_repositories"))["repositories"]
                if repo.get("watching") == expected:
                    break
                assert expected is not None and time.monotonic() < deadline, repo
                await asyncio.sleep(0.2)
