"""The checks before authentication, over real HTTP against real server processes: DNS
rebinding (Host, Origin) on streamable HTTP and SSE, the exposure check of an app started by
``uvicorn --factory``, and bounded request heads and bodies."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client

from tests.embedding_servers import unused_port
from tests.factories import write_sample_repo

EXE = str(Path(sys.executable).with_name("codebase-mcp"))
TOKEN = "s3cret-token-for-tests"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEBASE_MCP_ALLOWED")}
    env.pop("CODEBASE_MCP_AUTH_TOKEN", None)
    env.update(CODEBASE_MCP_EMBEDDER="hash", **extra)
    return env


def _started(argv: list[str], env: dict[str, str], base: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server did not answer /health"
        time.sleep(0.2)


def _stopped(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def server(
    tmp_path: Path, pg_env: str, request: pytest.FixtureRequest
) -> Iterator[tuple[str, int]]:
    """``serve`` on 127.0.0.1 (param: transport, and "token" for a server with one); yields
    its base URL and pid."""
    transport, *flags = str(getattr(request, "param", "http")).split("+")
    port = unused_port()
    env = _env(**({"CODEBASE_MCP_AUTH_TOKEN": TOKEN} if "token" in flags else {}))
    base = f"http://127.0.0.1:{port}"
    argv = [EXE, "serve", "--transport", transport, "--port", str(port)]
    proc = _started(argv, env, base, tmp_path / "server.log")
    try:
        yield base, proc.pid
    finally:
        _stopped(proc)


def _refusal(response: httpx.Response) -> str:
    return response.text.partition(":")[0]


async def test_a_token_less_http_server_refuses_foreign_hosts_and_origins(
    server: tuple[str, int], tmp_path: Path
) -> None:
    base, _ = server
    port = base.rsplit(":", 1)[1]
    evil = f"evil.example.com:{port}"
    async with httpx.AsyncClient(timeout=10) as http:
        # The attack of the issue: a page under a rebound name, and its origin.
        rebound = await http.post(
            f"{base}/mcp",
            json=INITIALIZE,
            headers={**ACCEPT, "Host": evil, "Origin": f"http://{evil}"},
        )
        assert (rebound.status_code, _refusal(rebound)) == (421, "HOST_NOT_ALLOWED")
        assert "CODEBASE_MCP_ALLOWED_HOSTS" in rebound.text
        from_page = await http.post(
            f"{base}/mcp", json=INITIALIZE, headers={**ACCEPT, "Origin": f"http://{evil}"}
        )
        assert (from_page.status_code, _refusal(from_page)) == (403, "ORIGIN_NOT_ALLOWED")
        probe = await http.get(f"{base}/health", headers={"Host": evil})
        assert probe.status_code == 421
        # A local page (a dev server on another port) and a client with no Origin pass.
        local_page = await http.post(
            f"{base}/mcp",
            json=INITIALIZE,
            headers={**ACCEPT, "Origin": "http://localhost:5173", "Host": f"localhost:{port}"},
        )
        assert local_page.status_code == 200

    root = write_sample_repo(tmp_path / "proj")
    async with Client(f"{base}/mcp") as client:
        indexed = await client.call_tool("index_repository", {"repo_path": str(root)})
        assert indexed.structured_content is not None
        assert indexed.structured_content["files_indexed"] == 2


@pytest.mark.parametrize("server", ["sse"], indirect=True)
async def test_a_token_less_sse_server_refuses_foreign_hosts(server: tuple[str, int]) -> None:
    base, _ = server
    async with httpx.AsyncClient(timeout=10) as http:
        async with http.stream("GET", f"{base}/sse", headers={"Host": "evil.example.com"}) as r:
            assert r.status_code == 421
        async with http.stream(
            "GET", f"{base}/sse", headers={"Origin": "https://evil.example.com"}
        ) as r:
            assert r.status_code == 403
        posted = await http.post(
            f"{base}/messages/?session_id=0", json=INITIALIZE, headers={"Host": "evil.example"}
        )
        assert posted.status_code == 421
    async with Client(f"{base}/sse") as client:
        assert len(await client.list_tools()) > 0


def _raw_post(port: int, head: bytes, body_pieces: int = 0) -> bytes:
    """POST ``head`` then up to ``body_pieces`` chunks of 64 KiB (chunked encoding); the
    server's answer (it may close before the body is sent: that is the point)."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(head)
        piece = b"10000\r\n" + b"a" * (1 << 16) + b"\r\n"
        try:
            for _ in range(body_pieces):
                # Stop sending once the answer is there: data sent to a socket the server
                # closed makes it reset the connection, and a reset may drop the answer.
                if select.select([conn], [], [], 0.05)[0]:
                    break
                conn.sendall(piece)
        except OSError:
            pass
        conn.settimeout(10)
        # The answer may come in several segments (its head, then its body): read until the
        # server closes (it answers "connection: close") or enough has come.
        answer = b""
        try:
            while len(answer) < 400 and (more := conn.recv(400 - len(answer))):
                answer += more
        except OSError:
            pass
        return answer


@pytest.mark.parametrize("server", ["http+token"], indirect=True)
async def test_a_server_with_a_token_bounds_bodies_before_authentication(
    server: tuple[str, int],
) -> None:
    base, _ = server
    port = int(base.rsplit(":", 1)[1])
    post = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    # Refused by its declared length, before a byte of it is sent.
    sized = _raw_post(port, post + b"Content-Length: 2097152\r\n\r\n")
    assert sized.startswith(b"HTTP/1.1 413 "), sized
    assert b"REQUEST_TOO_LARGE" in sized
    chunked = _raw_post(port, post + b"Transfer-Encoding: chunked\r\n\r\n", body_pieces=32)
    assert chunked.startswith(b"HTTP/1.1 413 "), chunked
    async with httpx.AsyncClient(timeout=30) as http:
        # A request of ordinary size still meets the token, as before; chunked too.
        small = await http.post(f"{base}/mcp", json=INITIALIZE, headers=ACCEPT)
        assert small.status_code == 401

        async def pieces() -> AsyncIterator[bytes]:
            yield b'{"jsonrpc": "2.0", '
            yield b'"id": 1, "method": "ping"}'

        streamed = await http.post(f"{base}/mcp", content=pieces(), headers=ACCEPT)
        assert streamed.status_code == 401


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _huge_head(port: int, size: int, answers: list[bytes]) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        chunk = b"x" * (1 << 16)
        try:
            for _ in range(size // len(chunk)):
                conn.sendall(chunk)
        except OSError:
            pass  # the server closed the connection: what we wanted
        conn.settimeout(10)
        try:
            answers.append(conn.recv(200))
        except OSError as e:
            answers.append(repr(e).encode())


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_huge_request_heads_are_refused_without_being_held(server: tuple[str, int]) -> None:
    base, pid = server
    port = int(base.rsplit(":", 1)[1])
    before = _rss_kib(pid)
    answers: list[bytes] = []
    threads = [
        threading.Thread(target=_huge_head, args=(port, 100 << 20, answers)) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    grown = _rss_kib(pid) - before
    assert grown < 50 * 1024, f"RSS grew {grown} KiB"
    assert len(answers) == 4
    assert all(a.startswith(b"HTTP/1.1 431 ") for a in answers), answers
    assert httpx.get(f"{base}/health", timeout=10).status_code == 200


def _address_beyond_loopback() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: only a route is chosen
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_the_worker_app_factory_refuses_clients_beyond_loopback_without_a_token(
    tmp_path: Path, pg_env: str
) -> None:
    address = _address_beyond_loopback()
    if address is None:
        pytest.skip("this machine has no address other than loopback")
    port = unused_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "codebase_mcp_search.entrypoints.mcp.http:worker_app",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
    ]
    proc = _started(argv, _env(), f"http://127.0.0.1:{port}", tmp_path / "uvicorn.log")
    try:
        beyond = httpx.get(f"http://{address}:{port}/health", timeout=10)
        assert (beyond.status_code, _refusal(beyond)) == (403, "EXPOSED_WITHOUT_TOKEN")
        refused = httpx.post(f"http://{address}:{port}/mcp", json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 403
    finally:
        _stopped(proc)
