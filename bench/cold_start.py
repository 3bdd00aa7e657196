"""Whole-process cold start: ``codebase-mcp index`` of a repository as one process, with the
hashing embedder and a fresh data directory each run (so the embedded server's initdb and
start are part of it), code trees alternating round by round.

Each run: wall time from the spawn to the exit of the process, its CPU (user + system, its
children included: the chunking workers), the embedded server's CPU (the postmaster and the
backends it reaped, read from ``/proc`` once the client is gone), the machine's load average
before the run and its busy CPU over the run (every process, ours and others': the machine is
shared), and when each line of the CLI's output came (seconds from the spawn). After each run
the server is stopped and its idle watcher ended, so runs do not share anything but the page
cache (the repository's files, cached after the first read).

    python -m bench.cold_start --repo /tmp/w10k-cold/baseline_repo \\
        --code now=build/editable:. --code main=/work/main/build/editable:/work/main \\
        --rounds 3 --out bench/results/cold_start_x.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def _busy_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _server_cpu(pgdata: Path) -> float | None:
    """CPU seconds of the server: the postmaster's own and its reaped children's."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError, IndexError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime: fields 14-17 of stat (1-based), 12-15 after the ')'.
    return sum(int(f) for f in fields[11:15]) / TICK


def _live_children_cpu(pgdata: Path) -> float:
    """CPU seconds of the server's processes still running (checkpointer, walwriter, ...)."""
    total = 0.0
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:  # ppid
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def _stop(data_dir: Path) -> None:
    pgdata = data_dir / "postgres"
    pg_ctl = None
    try:
        import pgserver

        pg_ctl = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_ctl"
    except ImportError:
        pass
    if pg_ctl is not None and (pgdata / "postmaster.pid").exists():
        user = ["su", "pgserver", "-s", "/bin/sh", "-c"] if os.geteuid() == 0 else None
        stop = f"{pg_ctl} -D {pgdata} -m fast -w stop"
        subprocess.run([*user, stop] if user else stop.split(), capture_output=True, check=False)
    # The idle watcher of this data directory (started by the run): its command line names it.
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"linger.py" in a for a in args) and str(pgdata).encode() in args:
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), 15)


def run_once(pythonpath: str, repo: Path, root: Path, env_extra: dict[str, str]) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="cold-", dir=root))
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "CODEBASE_MCP_EMBEDDER": "hash",
        "CODEBASE_MCP_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
        **env_extra,
    }
    load = os.getloadavg()
    busy0, total0 = _busy_ticks()
    code = "import sys; from codebase_mcp_search.entrypoints.cli.main import main; sys.exit(main())"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "index", str(repo)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lines: list[tuple[float, str]] = []
    assert proc.stdout is not None
    buf = b""
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.replace(b"\r", b"\n").split(b"\n")
        now = round(time.perf_counter() - t0, 3)
        lines.extend((now, ln.decode(errors="replace")) for ln in done if ln.strip())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    busy1, total1 = _busy_ticks()
    time.sleep(0.2)  # the client's backend reaped by the postmaster
    pgdata = data_dir / "postgres"
    server = _server_cpu(pgdata)
    live = _live_children_cpu(pgdata)
    _stop(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "wall_s": round(wall, 3),
        "exit": os.waitstatus_to_exitcode(status),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "server_cpu_s": None if server is None else round(server + live, 2),
        "load_before": [round(x, 2) for x in load],
        "machine_busy": round((busy1 - busy0) / max(total1 - total0, 1), 3),
        "output": lines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument(
        "--code", action="append", required=True, help="NAME=PYTHONPATH, alternated per round"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for every run")
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    codes = [c.split("=", 1) for c in args.code]
    env_extra = dict(e.split("=", 1) for e in args.env)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in codes}
    for r in range(args.rounds):
        for name, path in codes if r % 2 == 0 else codes[::-1]:
            res = run_once(path, args.repo, args.root, env_extra)
            runs[name].append(res)
            last = res["output"][-1][1] if res["output"] else ""
            print(
                f"round {r + 1} {name}: {res['wall_s']:.2f} s, cpu {res['cpu_s']} s, "
                f"server {res['server_cpu_s']} s, load {res['load_before'][0]}, "
                f"busy {res['machine_busy']}, exit {res['exit']}: {last[-90:]}",
                flush=True,
            )
    summary = {
        name: {
            "wall_median_s": statistics.median(r["wall_s"] for r in rs),
            "cpu_median_s": statistics.median(r["cpu_s"] for r in rs),
            "walls": [r["wall_s"] for r in rs],
        }
        for name, rs in runs.items()
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(
            json.dumps(
                {"repo": str(args.repo), "env": env_extra, "summary": summary, "runs": runs},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
