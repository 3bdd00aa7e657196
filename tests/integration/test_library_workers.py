"""A library process gets the CLI's default of worker processes: they must never import or re-run
the caller's script, even one without an ``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# No __main__ guard, on purpose: a spawned worker importing this script would index again (and
# multiprocessing would refuse to start processes from a bootstrapping child).
UNGUARDED_SCRIPT = """
import asyncio, multiprocessing.process, sys
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings

with open(sys.argv[2], "a") as runs:
    runs.write("run\\n")

started = []
start = multiprocessing.process.BaseProcess.start
def counting_start(self):
    started.append(self.name)
    start(self)
multiprocessing.process.BaseProcess.start = counting_start

async def main():
    settings = Settings(store="memory", embedder="none")  # index_workers: the default
    async with open_codebase(settings) as cb:
        result = await cb.index(sys.argv[1])
    print(settings.index_workers, len(started), result.files_indexed, result.status.value)

asyncio.run(main())
"""


def test_default_workers_never_rerun_an_unguarded_library_script(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # A run is chunked in worker processes from 1,000 changed files on.
    for i in range(1000):
        (repo / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_SCRIPT)
    runs = tmp_path / "runs.txt"
    proc = subprocess.run(
        [sys.executable, str(script), str(repo), str(runs)],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("CODEBASE_MCP_")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    workers, started, indexed, status = proc.stdout.split()
    assert (indexed, status) == ("1000", "success")
    if int(workers) > 1:  # a one-CPU machine chunks in a thread: nothing to spawn
        assert int(started) >= 1
    assert runs.read_text() == "run\n"  # the script ran once, in its own process only
