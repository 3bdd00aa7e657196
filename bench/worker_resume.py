"""A ``codebase-mcp worker`` SIGKILLed while it builds the semantic layer of the 10,000-file
workload, then started again: how soon the job runs again, and how much is embedded twice.

As a user with no server meets it: ``codebase-mcp index --lexical-first`` (a fresh data
directory, the embedded Postgres, nothing configured: the default embedder) writes the lexical
layer and queues the vectors; a ``codebase-mcp worker`` builds them. Once a share of the
vectors is stored (``--kill-at``) the worker is SIGKILLed; ``repos --json`` reads what was
stored; a new worker is started at once. Reported:

- ``restart_to_running_s``: from the new worker's start until the semantic job runs again
  (its next attempt, ``jobs status``);
- ``embedded_again``: texts the resumed run embedded beyond the chunks missing at the kill
  (at most one batch in flight is lost). The job counts its texts over all its runs: the
  resumed run's are the job's final count less what the dead worker's last heartbeat
  recorded (the count the new run starts from);
- ``semantic_complete_s``: from the first worker's start until every chunk holds a vector.

    python -m bench.worker_resume [--workload ../shared/bench/baseline-10k/baseline_repo.tar.gz]
        [--kill-at 0.3] [--pythonpath DIR] [--out bench/results/worker_resume_10k.json]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from bench.mcp_load import _cli
from bench.retrieval import emit
from bench.searchable import TERMINAL, WORKLOAD, fresh_home, stop

POLL_S = 0.5


def _json(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [*_cli(env), *args, "--json"], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def _repository(env: dict[str, str]) -> dict[str, Any]:
    [repo] = _json(env, "repos")["repositories"]
    return dict(repo)


def _semantic_job(env: dict[str, str]) -> dict[str, Any]:
    jobs = _json(env, "jobs", "list")["jobs"]
    return next(j for j in jobs if j.get("kind") == "semantic")


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [*_cli(env), "worker", "--no-watch"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def measure(args: argparse.Namespace, env: dict[str, str], root: Path) -> dict[str, Any]:
    log = Path(env["CODEBASE_MCP_DATA_DIR"]) / "worker.log"
    started = time.perf_counter()
    subprocess.run(
        [*_cli(env), "index", "--lexical-first", "--quiet", str(root)], env=env, check=True
    )
    out: dict[str, Any] = {"lexical_index_s": round(time.perf_counter() - started, 2)}
    job = _semantic_job(env)
    first = time.perf_counter()
    worker = _worker(env, log)
    try:
        while True:
            repo = _repository(env)
            if repo["vector_count"] >= args.kill_at * repo["chunk_count"]:
                break
            time.sleep(POLL_S)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        at_kill = _repository(env)
        missing = at_kill["chunk_count"] - at_kill["vector_count"]
        recorded = _json(env, "jobs", "status", job["job_id"]).get("chunks_embedded") or 0
        restarted = time.perf_counter()
        worker = _worker(env, log)
        while True:
            status = _json(env, "jobs", "status", job["job_id"])
            if status["attempts"] >= 2 or status["status"] in TERMINAL:
                break
            time.sleep(0.1)
        resumed_s = time.perf_counter() - restarted
        while status["status"] not in TERMINAL:
            time.sleep(1.0)
            status = _json(env, "jobs", "status", job["job_id"])
        done = _repository(env)
        out.update(
            chunks=done["chunk_count"],
            vectors=done["vector_count"],
            vectors_at_kill=at_kill["vector_count"],
            missing_at_kill=missing,
            restart_to_running_s=round(resumed_s, 2),
            job_status=status["status"],
            attempts=status["attempts"],
            job_embedded=status.get("chunks_embedded"),
            recorded_at_kill=recorded,
            resumed_run_embedded=(status.get("chunks_embedded") or 0) - recorded,
            embedded_again=max(0, (status.get("chunks_embedded") or 0) - recorded - missing),
            semantic_complete_s=round(time.perf_counter() - first, 2),
        )
    finally:
        stop(worker)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    with fresh_home("codebase-mcp-worker-resume-", args.embedder, args.pythonpath) as (tmp, env):
        with tarfile.open(args.workload) as tar:
            tar.extractall(tmp / "work", filter="data")
        root = next(p for p in (tmp / "work").iterdir() if p.is_dir())
        result = measure(args, env, root)
        result["version"] = args.pythonpath or "this checkout"
        return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--embedder", default="auto")
    p.add_argument("--kill-at", type=float, default=0.3)
    p.add_argument("--pythonpath", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    emit(run(args), args.out)


if __name__ == "__main__":
    main()
