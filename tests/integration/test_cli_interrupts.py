"""Ctrl-C at any moment of a command (real ``codebase-mcp`` processes, SIGINT as a terminal
sends it): one short message, ``interrupted`` last, exit 130, never a traceback nor Python's
"Exception ignored"; and the index stays consistent: a normal run afterwards gives what an
uninterrupted run gives.

The commands use the embedded PostgreSQL in a data directory of the test's own (no
DATABASE_URL), so the moments interrupted include the server's first start (initdb). The
moments are chosen by time after start and by the phase lines on stderr; where a moment
lands depends on the machine's speed, and every assertion holds wherever it lands.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fasteners
import pytest

from tests.embedding_servers import OLLAMA_MODEL, EmbeddingServer, embedding_server
from tests.integration.test_mcp_jobs import write_repo

CLI = str(Path(sys.executable).with_name("codebase-mcp"))
DEADLINE_S = 180.0
# A run that ends with exit 0 this soon after a timed Ctrl-C was already exiting (see
# ``_interrupt``); the work itself takes longer against the slow embedding server.
EXIT_RACE_S = 0.5


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory outside pytest's temporary root: the embedded server runs as another
    user when the tests run as root, and a pytest session starting meanwhile (another
    checkout's) makes that root private to root again."""
    path = Path(tempfile.mkdtemp(prefix="cb-interrupts-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(data_dir: Path, server: EmbeddingServer, project: str) -> dict[str, str]:
    (data_dir / "run").mkdir(mode=0o700, exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CODEBASE_MCP_DATABASE_URL")
    }
    return env | {
        "CODEBASE_MCP_DATA_DIR": str(data_dir),
        # pgserver's lock file (which every start and stop takes) of these processes alone.
        "XDG_RUNTIME_DIR": str(data_dir / "run"),
        "CODEBASE_MCP_PROJECT": project,
        "CODEBASE_MCP_EMBEDDER": "ollama",
        "CODEBASE_MCP_OLLAMA_BASE_URL": server.url,
        "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
        # Small batches, answered slowly: the vectors take seconds, interruptible midway.
        "CODEBASE_MCP_EMBEDDING_BATCH_SIZE": "2",
        "CODEBASE_MCP_EMBEDDING_CONCURRENCY": "1",
        "CODEBASE_MCP_VECTOR_BATCH_CHUNKS": "4",
    }


class _Lines:
    """A stream of the process read line by line as it comes, with a wait for a line."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._ended = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, prefix: str) -> bool:
        """Whether a line starting with ``prefix`` came before the stream ended."""
        deadline = time.monotonic() + DEADLINE_S
        with self._changed:
            while not any(line.startswith(prefix) for line in self.lines):
                if self._ended or time.monotonic() > deadline:
                    return False
                self._changed.wait(1.0)
            return True

    def text(self) -> str:
        self._thread.join(DEADLINE_S)
        return "\n".join(self.lines)


def _interrupt(env: dict[str, str], argv: list[str], *, after_s: float = 0.0, on: str = "") -> str:
    """Run ``codebase-mcp ARGV``, and send SIGINT to its process group (what Ctrl-C in a
    terminal does) ``after_s`` seconds after start, or once a line starting with ``on``
    appears (stderr; ``stdout:`` first: stdout). Checks what every interrupt must give;
    returns stderr."""
    with subprocess.Popen(
        [CLI, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a shell's job: the signal reaches all
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = _Lines(proc.stdout), _Lines(proc.stderr)
        try:
            if on.startswith("stdout:"):
                assert out.wait_for(on.removeprefix("stdout:")), err.text()
            elif on:
                assert err.wait_for(on), f"no line {on!r}: {err.text()}"
            else:
                time.sleep(after_s)
            running = proc.poll() is None
            if running:
                os.killpg(proc.pid, signal.SIGINT)
            sent = time.monotonic()
            proc.wait(DEADLINE_S)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
        text = err.text()
        printed = out.text()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    if running and not on and proc.returncode == 0:
        # A timed signal can race the command's own exit: sent as it exits, or landing in its
        # last instructions, past the check for a Ctrl-C. Then it ends as an uninterrupted
        # run does, its result printed, and at once: a Ctrl-C ignored in the middle of the
        # work would leave it running on.
        assert took < EXIT_RACE_S, (took, text)
        assert printed.strip() and "interrupted" not in text.splitlines(), text
        return text
    if running:  # (not when it had ended before the signal was sent)
        assert proc.returncode == 130, text
        assert text.splitlines()[-1] == "interrupted", text
    return text


def _interrupt_at_exit(env: dict[str, str], argv: list[str], data_dir: Path) -> None:
    """Ctrl-C once the command is done (its result printed) while the process exits: stopping
    the embedded server (pgserver's exit callback) must not be cut short. The test holds
    pgserver's lock meanwhile, so the callback waits for it when the signal comes."""
    lock = fasteners.InterProcessLock(data_dir / "run" / "python_PostgresServer" / ".lockfile")
    with subprocess.Popen(
        [CLI, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = _Lines(proc.stdout), _Lines(proc.stderr)
        try:
            assert err.wait_for("scanning"), err.text()  # the server is started by then
            with lock:
                assert out.wait_for(""), err.text()
                time.sleep(0.5)  # the exit callbacks run, and wait for the lock
                os.killpg(proc.pid, signal.SIGINT)
            proc.wait(DEADLINE_S)
        finally:
            if proc.poll() is None:
                proc.kill()
        text = err.text()
        out.text()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert proc.returncode == 130, text
    assert text.splitlines()[-1] == "interrupted", text
    assert not (data_dir / "postgres" / "postmaster.pid").exists()  # it was the last user


def _cli(env: dict[str, str], *argv: str) -> str:
    proc = subprocess.run(
        [CLI, *argv], env=env, capture_output=True, text=True, timeout=DEADLINE_S, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _state(env: dict[str, str]) -> tuple[Any, ...]:
    """The index as a user sees it: the repository's counts, and every chunk (each holds
    'path') as lexical and as semantic search find them."""
    [repo] = json.loads(_cli(env, "repos", "--json"))["repositories"]
    counts = (repo["file_count"], repo["chunk_count"], repo["vector_count"])
    found = []
    for mode in ("lexical", "semantic"):
        payload = json.loads(_cli(env, "search", "path", "--mode", mode, "--limit", "50", "--json"))
        found.append(
            sorted((h["file_path"], h["start_line"], h["end_line"]) for h in payload["results"])
        )
    return counts, *found


def test_ctrl_c_at_any_moment_of_index_leaves_a_consistent_index(
    tmp_path: Path, data_dir: Path, pg_env: str
) -> None:
    root = write_repo(tmp_path / "repo", 12)
    with embedding_server(delay_s=0.05) as server:
        env = _env(data_dir, server, pg_env)
        # While Python loads, while the embedded server is first made and started, and on
        # (where the machine's speed puts them).
        for after_s in (0.2, 0.5, 1.0, 2.0, 3.0):
            _interrupt(env, ["index", str(root)], after_s=after_s)
        # Once the run has begun, it says what it keeps and how to go on. (Files added first:
        # on a fast machine the runs above may have indexed everything.)
        for files, phase in ((18, "scanning"), (30, "embedding ")):
            write_repo(root, files)
            err = _interrupt(env, ["index", str(root)], on=phase)
            stopped = next(line for line in err.splitlines() if line.startswith("stopped: "))
            assert f"'codebase-mcp index {root}'" in stopped, err
        _interrupt_at_exit(env, ["index", str(root)], data_dir)

        _cli(env, "index", str(root))
        interrupted = _state(env)
        reference = {**env, "CODEBASE_MCP_PROJECT": pg_env + "-ref"}
        _cli(reference, "index", str(root))
        assert interrupted == _state(reference)
        assert interrupted[0] == (30, 60, 60)


def test_ctrl_c_during_search(tmp_path: Path, data_dir: Path, pg_env: str) -> None:
    root = write_repo(tmp_path / "repo", 4)
    with embedding_server() as server:
        env = _env(data_dir, server, pg_env)
        _interrupt(env, ["search", "load path"], after_s=0.5)
        _cli(env, "index", str(root))
        _interrupt(env, ["search", "load path", "--index", str(root)], after_s=2.0)
        _interrupt(env, ["search", "load path"], on="stdout:")
        assert "load_" in _cli(env, "search", "load path")
