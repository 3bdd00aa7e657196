"""Where a loaded server's CPU goes: py-spy samples of its processes, in categories.

``bench.mcp_load --profile`` attaches ``py-spy record --format raw`` (install it with pip; it
is not a dependency) to each server process for the burst, then sums the samples by the part
of the server that was running: the MCP framework and HTTP, the search service's steps, the
database driver, the event loop's own work. A sample counts once, for the first category in
``CATEGORIES`` that one of its frames matches (so the driver's work inside a retrieval counts
as the driver's, the ranking's as the ranking's).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

# (category, substrings of a frame's text that put a sample in it), first match wins.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ranking (codebase_core/ranking)", ("codebase_core/ranking/",)),
    ("fusion", ("codebase_core/fusion.py",)),
    ("database driver (asyncpg)", ("asyncpg/",)),
    ("chunk objects from rows", ("chunk_of", "trusted_values")),
    ("store adapter (SQL results to scores)", ("adapters/postgres/",)),
    ("query embedding", ("adapters/hashing/", "adapters/onnx/")),
    ("hits and stale check", ("services/hits.py", "adapters/filesystem/")),
    ("search service, other", ("codebase_core/",)),
    ("worker threads", ("threading.py",)),
    (
        "tool and response format",
        ("entrypoints/mcp/tools_", "entrypoints/mcp/formats", "presenters"),
    ),
    ("health probe", ("health",)),
    # The HTTP server's frames sit below fastmcp's app in most stacks: one category.
    (
        "MCP and HTTP stack (fastmcp, mcp, anyio, starlette, uvicorn)",
        ("fastmcp/", "/mcp/", "anyio/", "starlette/", "uvicorn/protocols", "sse_starlette/"),
    ),
)


def category(stack: str) -> str:
    for name, needles in CATEGORIES:
        if any(n in stack for n in needles):
            return name
    last = stack.rsplit(";", 1)[-1]
    return "event loop" if last.startswith("Runner.run") else "other"


def summarise(raw_files: list[Path]) -> dict[str, float]:
    """Each category's share of the samples (percent), largest first."""
    counts: Counter[str] = Counter()
    for f in raw_files:
        for line in f.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if stack and n.isdigit():
                counts[category(stack)] += int(n)
    total = sum(counts.values()) or 1
    return {k: round(100 * v / total, 1) for k, v in counts.most_common()}


def children(pid: int) -> list[int]:
    """The server's processes: ``pid``'s children when it supervises workers, else itself."""
    try:
        kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        kids = []
    return kids or [pid]


class Profiler:
    """py-spy on a server's processes, from ``start`` until ``finish``."""

    def __init__(self, pid: int, out: Path) -> None:
        spy = shutil.which("py-spy")
        if spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy)")
        out.mkdir(parents=True, exist_ok=True)
        self.spy, self.pids, self.out = spy, children(pid), out
        self.files: list[Path] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.files = [self.out / f"server{i}.raw" for i, _ in enumerate(self.pids)]
        self.procs = [
            subprocess.Popen(
                [self.spy, "record", "-p", str(p), "-r", "200", "-f", "raw", "--nonblocking",
                 "-o", str(f)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for p, f in zip(self.pids, self.files, strict=True)
        ]  # fmt: skip
        time.sleep(1.0)  # attached before the first call

    def finish(self) -> dict[str, float]:
        """Stop sampling (py-spy writes its file on SIGINT); the categories' shares."""
        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            p.wait(120)
        return summarise([f for f in self.files if f.exists()])
