"""``index --background``, ``jobs`` and ``worker`` from the command line, on Postgres."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from codebase_mcp_search.entrypoints.cli.main import main
from tests.factories import write_sample_repo
from tests.integration.test_cli_manage import fails, run_json
from tests.integration.test_job_workers import CLI, _start_worker, _until_ready


def test_background_index_jobs_and_a_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    started = run_json(capsys, "index", str(root), "--background")
    job_id = started["job_id"]
    assert started["status"] == "pending"
    assert started["project_id"] == os.environ["CODEBASE_MCP_PROJECT"]

    code, line = fails(capsys, "index", str(root), "--background")
    assert code == 1 and line.startswith("DUPLICATE_JOB") and job_id in line

    listed = run_json(capsys, "jobs", "list")
    assert [j["job_id"] for j in listed["jobs"]] == [job_id]
    assert run_json(capsys, "jobs") == listed  # list is the default action
    assert run_json(capsys, "jobs", "list", "--status", "completed")["total_count"] == 0
    code, line = fails(capsys, "jobs", "list", "--status", "done")
    assert code == 2 and line.startswith("INVALID_STATUS")
    code, line = fails(capsys, "jobs", "list", "--limit", "0")
    assert code == 2 and line.startswith("INVALID_LIMIT")

    # No server runs: a worker process takes the job.
    log = tmp_path / "worker.log"
    with log.open("wb") as err:
        worker = subprocess.Popen(
            [CLI, "worker", "--concurrency", "1"], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            status = run_json(capsys, "jobs", "status", job_id)
            if status["status"] == "completed":
                break
            assert status["status"] in ("pending", "running"), status
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert "up to 1 jobs" in log.read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(20) == 0
    assert status["files_indexed"] == 2 and status["progress_percentage"] == 100

    capsys.readouterr()
    assert main(["jobs", "status", job_id]) == 0
    text = capsys.readouterr().out
    assert "completed" in text and "100% Completed" in text

    code, line = fails(capsys, "jobs", "cancel", job_id)
    assert code == 2 and line.startswith("INVALID_STATUS")
    code, line = fails(capsys, "jobs", "status", "nope")
    assert code == 2 and line.startswith("VALIDATION_ERROR")

    again = run_json(capsys, "index", str(root), "--background")
    cancelled = run_json(capsys, "jobs", "cancel", again["job_id"])
    assert cancelled["status"] == "cancelled"


def test_background_jobs_need_a_shared_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    monkeypatch.setenv("CODEBASE_MCP_STORE", "memory")
    code, line = fails(capsys, "index", str(root), "--background")
    assert code == 2 and line.startswith("VALIDATION_ERROR") and "Postgres" in line
    code, line = fails(capsys, "worker")
    assert code == 2 and "Postgres" in line


async def test_a_worker_stops_on_sigint(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    worker = _start_worker(dict(os.environ), log)
    await _until_ready(log, worker)
    worker.send_signal(signal.SIGINT)
    assert worker.wait(20) == 0
    assert "worker stopped" in log.read_text()
