"""``codebase-mcp serve`` as a real subprocess: stdio with the official MCP SDK client, and
streamable HTTP / SSE on 127.0.0.1 with a bearer token and the health probe."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.embedding_servers import unused_port
from tests.factories import write_sample_repo

EXE = str(Path(sys.executable).with_name("codebase-mcp"))
TOKEN = "s3cret-token-for-tests"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(CODEBASE_MCP_EMBEDDER="hash", **extra)
    return env


async def test_stdio_with_the_official_sdk_client(tmp_path: Path, pg_env: str) -> None:
    root = write_sample_repo(tmp_path / "proj")
    params = StdioServerParameters(command=EXE, args=["serve"], env=_env())
    errlog = (tmp_path / "stderr.log").open("w")
    try:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "codebase-mcp"
            tools = await session.list_tools()
            assert {t.name for t in tools.tools} >= {"index_repository", "list_tasks"}

            indexed = await session.call_tool("index_repository", {"repo_path": str(root)})
            assert not indexed.is_error, indexed.content
            data = json.loads(indexed.content[0].text)
            assert data["files_indexed"] == 2 and data["project_id"] == pg_env

            found = await session.call_tool(
                "search_code", {"query": "retry after failure", "detail_level": "concise"}
            )
            hits = json.loads(found.content[0].text)["results"]
            assert hits[0]["symbol"] == "retry_with_backoff"

            bad = await session.call_tool("list_tasks", {"limit": 150})
            assert bad.is_error
            assert bad.content[0].text == (
                "INVALID_LIMIT: Limit must be between 1 and 100, got 150"
            )
            task = await session.call_tool("create_task", {"title": "over stdio"})
            assert json.loads(task.content[0].text)["status"] == "need to be done"
    finally:
        errlog.close()


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }


def test_stdout_carries_nothing_but_the_protocol(tmp_path: Path, pg_env: str) -> None:
    """No banner, no log line, no update notice: every stdout line is JSON-RPC."""
    messages = [
        _initialize(),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "list_tasks", "arguments": {}},
        },
    ]
    replies: list[dict[str, Any]] = []
    with (
        (tmp_path / "stderr.log").open("w") as errlog,
        subprocess.Popen(
            [EXE, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=_env(),
            text=True,
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for message in messages:
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                if "id" in message:
                    replies.append(json.loads(proc.stdout.readline()))
            proc.stdin.close()
            rest = proc.stdout.read()
            proc.wait(timeout=30)
        finally:
            proc.kill()
    assert [r.get("id") for r in replies] == [1, 2, 3]
    assert len(replies[1]["result"]["tools"]) == 13
    assert json.loads(replies[2]["result"]["content"][0]["text"])["success"] is True
    assert rest.strip() == ""
    assert proc.returncode == 0


@pytest.fixture
def http_server(tmp_path: Path, pg_env: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """``serve --transport <param>`` on a free port with a token (param ``(transport,
    workers)`` for several processes); yields its base URL."""
    param = getattr(request, "param", "http")
    transport, workers = param if isinstance(param, tuple) else (param, 1)
    port = unused_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [EXE, "serve", "--transport", transport, "--port", str(port), "--workers", str(workers)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_env(CODEBASE_MCP_AUTH_TOKEN=TOKEN),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "the server did not answer /health"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def test_http_health_token_and_tools(http_server: str) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        body = (await http.get(f"{http_server}/health")).json()
    assert set(body) == {"status", "database", "embedder", "version", "uptime_seconds"}
    assert (body["status"], body["database"]) == ("ok", "ok")
    assert body["uptime_seconds"] >= 0
    # The health probe tells nothing of paths or configuration.
    shown = json.dumps(body)
    assert os.environ["DATABASE_URL"] not in shown and TOKEN not in shown
    assert os.environ["CODEBASE_MCP_DATA_DIR"] not in shown

    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        refused = await http.post(f"{http_server}/mcp", json=_initialize(), headers=headers)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert "error=" not in refused.headers["www-authenticate"]  # none sent: RFC 6750 3.1
        assert refused.json()["error_description"].startswith("no bearer token was sent")
        wrong = await http.post(
            f"{http_server}/mcp",
            json=_initialize(),
            headers={**headers, "Authorization": "Bearer not-the-token"},
        )
        assert wrong.status_code == 401
        # What is wrong and how to fix it, never the token (nor the one sent), and no OAuth
        # advice: there is nothing to register with this server.
        challenge = wrong.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token", error_description="')
        described = wrong.json()["error_description"]
        assert described in challenge
        assert described.startswith("the bearer token sent is not this server's"), described
        for said in (refused.json()["error_description"], described):
            assert "Authorization: Bearer <CODEBASE_MCP_AUTH_TOKEN>" in said, said
        for shown in (wrong.text, challenge, refused.text):
            assert "re-register" not in shown and TOKEN not in shown
            assert "not-the-token" not in shown

    async with Client(f"{http_server}/mcp", auth=TOKEN) as client:
        assert len(await client.list_tools()) == 13
        task = await client.call_tool("create_task", {"title": "over HTTP"})
        assert task.structured_content is not None
        assert task.structured_content["title"] == "over HTTP"
        bad = await client.call_tool(
            "get_task", {"task_id": "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"}, raise_on_error=False
        )
        assert bad.is_error and bad.content[0].text.startswith("TASK_NOT_FOUND: ")

    # Tasks never need the embedder: it is not loaded yet (the SSE test loads it).
    async with httpx.AsyncClient(timeout=5) as http:
        assert (await http.get(f"{http_server}/health")).json()["embedder"] == "not loaded"


@pytest.mark.parametrize("http_server", ["sse"], indirect=True)
async def test_sse_transport_with_token(http_server: str, tmp_path: Path) -> None:
    root = write_sample_repo(tmp_path / "proj")
    async with (
        httpx.AsyncClient(timeout=5) as http,
        http.stream("GET", f"{http_server}/sse") as refused,
    ):
        assert refused.status_code == 401
        body = json.loads(await refused.aread())
        assert "Authorization: Bearer <CODEBASE_MCP_AUTH_TOKEN>" in body["error_description"]
    async with Client(f"{http_server}/sse", auth=TOKEN) as client:
        indexed = await client.call_tool("index_repository", {"repo_path": str(root)})
        assert indexed.structured_content is not None
        assert indexed.structured_content["files_indexed"] == 2
        found = await client.call_tool("search_code", {"query": "retry_with_backoff"})
        assert found.structured_content is not None
        assert found.structured_content["results"][0]["file_path"] == "pkg/retry.py"
    async with httpx.AsyncClient(timeout=5) as http:
        assert (await http.get(f"{http_server}/health")).json()["embedder"] == "hash (hash-384)"


def _argv(proc: Path) -> list[str]:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:  # gone meanwhile
        return []


def _supervisor(port: str) -> int:
    """The process of ``serve --workers 2`` on ``port``."""
    [supervisor] = [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and _argv(p)[-7:] == ["serve", "--transport", "http", "--port", port, "--workers", "2"]
    ]
    return supervisor


def _server_processes(port: str) -> list[int]:
    """The processes ``serve --workers 2`` on ``port`` spawned to serve (not its
    multiprocessing resource tracker)."""
    supervisor = _supervisor(port)
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    return [int(c) for c in children if "spawn_main" in " ".join(_argv(Path(f"/proc/{c}")))]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("http_server", [("http", 2)], indirect=True)
async def test_several_server_processes_share_the_port(http_server: str, tmp_path: Path) -> None:
    """``--workers 2``: two processes under one supervisor answer stateless streamable HTTP
    (a client's calls need no session living in one of them), and one of them runs the job
    worker, so a background job completes."""
    servers = _server_processes(http_server.rsplit(":", 1)[1])
    assert len(servers) == 2
    first, second = write_sample_repo(tmp_path / "a"), write_sample_repo(tmp_path / "b")
    async with Client(f"{http_server}/mcp", auth=TOKEN) as client:
        indexed = await client.call_tool("index_repository", {"repo_path": str(first)})
        assert indexed.structured_content is not None
        assert indexed.structured_content["files_indexed"] == 2
        for _ in range(6):  # whichever process answers, it sees the same index
            found = await client.call_tool("search_code", {"query": "retry_with_backoff"})
            assert found.structured_content is not None
            assert found.structured_content["results"][0]["file_path"] == "pkg/retry.py"
        started = await client.call_tool("start_indexing_background", {"repo_path": str(second)})
        assert started.structured_content is not None
        job_id = started.structured_content["job_id"]
        deadline = time.monotonic() + 60
        while True:
            status = await client.call_tool("get_job_status", {"job_id": job_id})
            assert status.structured_content is not None
            if status.structured_content["status"] == "completed":
                break
            assert time.monotonic() < deadline, status.structured_content
            await asyncio.sleep(0.2)


def _accepted(pid: int, port: int) -> int:
    """The connections to ``port`` that process ``pid`` has accepted (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            # State 01: established.
            if local_port == port and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("http_server", [("http", 2)], indirect=True)
def test_connections_spread_over_the_processes_and_a_dead_one_is_replaced(
    http_server: str,
) -> None:
    """Each process listens on a socket of its own (SO_REUSEPORT): 40 connections opened at
    once are spread over both (a shared socket often gave them all to one). A process killed
    is replaced, and no new connection waits on the dead one's socket; SIGHUP replaces
    both."""
    port = int(http_server.rsplit(":", 1)[1])
    servers = _server_processes(str(port))
    conns = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
    try:
        deadline = time.monotonic() + 10
        while sum(_accepted(p, port) for p in servers) < 40 and time.monotonic() < deadline:
            time.sleep(0.1)
        spread = [_accepted(p, port) for p in servers]
        # Binomial(40, 1/2): fewer than 8 in one process has odds of about 1e-5.
        assert sum(spread) == 40 and min(spread) >= 8, spread
    finally:
        for c in conns:
            c.close()
    os.kill(servers[0], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:
        now = _server_processes(str(port))
        if len(now) == 2 and servers[0] not in now:
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    # Every fresh connection is answered (one hashed to the dead process's socket would wait
    # for ever had its socket stayed open).
    for _ in range(20):
        assert httpx.get(f"{http_server}/health", timeout=10).status_code == 200
    # SIGHUP replaces both processes, as uvicorn's supervisor does, and serving goes on.
    before = set(_server_processes(str(port)))
    os.kill(_supervisor(str(port)), signal.SIGHUP)
    deadline = time.monotonic() + 60
    while not (len(now := _server_processes(str(port))) == 2 and before.isdisjoint(now)):
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    for _ in range(10):
        assert httpx.get(f"{http_server}/health", timeout=10).status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "2"], "VALIDATION_ERROR: --workers=2: several server processes need"),
        (["--transport", "http", "--workers", "0"], "VALIDATION_ERROR: --workers=0: must be"),
        (
            ["--transport", "http", "--workers", "2", "--store", "memory"],
            "VALIDATION_ERROR: --workers=2: several server processes need a shared store",
        ),
    ],
)
def test_bad_worker_counts_are_refused(args: list[str], message: str) -> None:
    memory = args[-2:] == ["--store", "memory"]
    proc = subprocess.run(
        [EXE, "serve", "--port", str(unused_port()), *(args[:-2] if memory else args)],
        check=False,
        capture_output=True,
        text=True,
        env=_env(**({"CODEBASE_MCP_STORE": "memory"} if memory else {})),
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(message), proc.stderr


@pytest.mark.parametrize(
    ("env", "needs"),
    [
        ({}, "CODEBASE_MCP_AUTH_TOKEN"),
        ({"CODEBASE_MCP_AUTH_TOKEN": TOKEN}, "CODEBASE_MCP_ALLOWED_ROOTS"),
        # An empty or short token is refused, never taken as "no token"; nor echoed.
        ({"CODEBASE_MCP_AUTH_TOKEN": ""}, "CODEBASE_MCP_AUTH_TOKEN"),
        ({"CODEBASE_MCP_AUTH_TOKEN": "hunter2"}, "CODEBASE_MCP_AUTH_TOKEN"),
    ],
)
def test_non_loopback_needs_a_token_and_roots(env: dict[str, str], needs: str) -> None:
    clean = {k: v for k, v in _env(**env).items() if k not in ("CODEBASE_MCP_ALLOWED_ROOTS",)}
    if "CODEBASE_MCP_AUTH_TOKEN" not in env:
        clean.pop("CODEBASE_MCP_AUTH_TOKEN", None)
    proc = subprocess.run(
        [EXE, "serve", "--transport", "http", "--host", "0.0.0.0", "--port", str(unused_port())],
        check=False,
        capture_output=True,
        text=True,
        env=clean,
        timeout=60,
    )
    assert proc.returncode == 2
    shown = "'***'" if env.get("CODEBASE_MCP_AUTH_TOKEN") in ("", "hunter2") else "None"
    assert proc.stderr.startswith(f"VALIDATION_ERROR: {needs}={shown}: "), proc.stderr
    assert "hunter2" not in proc.stderr
    assert proc.stdout == ""
