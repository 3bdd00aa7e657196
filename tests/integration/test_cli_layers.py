"""The CLI's two layers: ``index`` waits for both and, interrupted while it builds the vectors,
keeps what it stored and says how to go on; ``--lexical-first`` returns once search works and
leaves the vectors to a worker (or the next run); ``repos`` and ``search`` show how far the
vectors are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.embedding_servers import EMBEDDING_PATHS, OLLAMA_MODEL, embedding_server
from tests.integration.test_mcp_jobs import write_repo

CLI = str(Path(sys.executable).with_name("codebase-mcp"))


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *argv], capture_output=True, text=True, env=env, timeout=180, check=False
    )


def _documents(server: Any) -> int:
    """Chunk texts the server embedded (not the query that opens an embedder: it learns the
    model's dimension)."""
    return sum(
        len(r.inputs)
        for r in server.requests
        if r.path in EMBEDDING_PATHS and not any("dimension probe" in t for t in r.inputs)
    )


def _repos(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    proc = _cli("repos", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    found: list[dict[str, Any]] = json.loads(proc.stdout)["repositories"]
    return found


def test_lexical_first_returns_when_search_works_and_leaves_the_vectors(
    tmp_path: Path, pg_env: str
) -> None:
    root = write_repo(tmp_path / "repo", 8)
    with embedding_server() as model:
        env = {
            **os.environ,
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": model.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
        }
        _lexical_first_then_both(root, env)


def _lexical_first_then_both(root: Path, env: dict[str, str]) -> None:
    first = _cli("index", str(root), "--lexical-first", env=env)
    assert first.returncode == 0, first.stderr
    assert "16 chunks wait for a vector: job " in first.stdout
    assert "is searchable now" not in first.stderr  # it did not go on to embed them
    [repo] = _repos(env)
    assert (repo["vector_count"], repo["semantic_percent"]) == (0, 0)
    assert repo["semantic_job_id"] and repo["semantic_eta_seconds"] is None
    jobs = json.loads(_cli("jobs", "--json", env=env).stdout)["jobs"]
    assert [(j["kind"], j["status"]) for j in jobs] == [("semantic", "pending")]

    # Search works already: by exact terms, and it says what it could not yet compare.
    found = _cli("search", "load path", "--limit", "3", env=env)
    assert found.returncode == 0, found.stderr
    assert "vectors of repo: 0/16 chunks (job " in found.stdout
    assert "pkg/mod_" in found.stdout and "lexical search" in found.stdout
    listed = _cli("repos", env=env).stdout
    assert " 0% (queued) " in listed

    # The next index run (no worker ran the job) builds them.
    second = _cli("index", str(root), env=env)
    assert second.returncode == 0, second.stderr
    assert "embedding 16 chunks" in second.stderr and "wait for a vector" not in second.stdout
    [repo] = _repos(env)
    assert (repo["vector_count"], repo["semantic_percent"]) == (16, 100)
    hybrid = _cli("search", "load path", "--limit", "3", "--json", env=env)
    payload = json.loads(hybrid.stdout)
    assert payload["mode"] == "hybrid" and "semantic_coverage" not in payload


def test_ctrl_c_while_the_vectors_are_built_keeps_them_and_says_how_to_go_on(
    tmp_path: Path, pg_env: str
) -> None:
    root = write_repo(tmp_path / "repo", 30)
    with embedding_server(delay_s=0.1) as server:
        env = {
            **os.environ,
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": server.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
            "CODEBASE_MCP_EMBEDDING_BATCH_SIZE": "2",
            "CODEBASE_MCP_EMBEDDING_CONCURRENCY": "1",
            "CODEBASE_MCP_VECTOR_BATCH_CHUNKS": "4",
        }
        proc = subprocess.Popen(
            [CLI, "index", str(root)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not server.embedding_requests or len(server.embedding_requests) < 6:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        stopped = next(line for line in err.splitlines() if line.startswith("stopped: "))
        kept = int(stopped.split()[1])
        assert f"{kept} of 60 vectors were stored and are kept" in stopped
        assert f"'codebase-mcp index {root}' embeds the rest" in stopped
        [repo] = _repos(env)
        assert repo["file_count"] == 30 and repo["vector_count"] == kept > 0

        asked = _documents(server)
        again = _cli("index", str(root), env=env)
        assert again.returncode == 0, again.stderr
        assert _documents(server) - asked == 60 - kept  # only what was missing
        [repo] = _repos(env)
        assert repo["vector_count"] == 60 and repo["semantic_percent"] == 100
