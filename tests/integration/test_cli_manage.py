"""``repos``, ``projects`` and ``tasks`` from the command line: what the MCP tools do, with the
same coded errors and exit codes, and no project created by reading one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.entrypoints.cli.main import main
from tests.conftest import drop_projects, new_project_id
from tests.factories import write_sample_repo

SHA = "0123456789abcdef0123456789abcdef01234567"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def fails(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return code, lines[0]


def project_ids(capsys: pytest.CaptureFixture[str]) -> set[str]:
    return {p["id"] for p in run_json(capsys, "projects")["projects"]}


@pytest.fixture
def extra_projects(pg_url: str) -> Iterator[list[str]]:
    created: list[str] = []
    yield created
    drop_projects(pg_url, created)


def test_repos_list_get_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_sample_repo(tmp_path / "sample")
    indexed = run_json(capsys, "index", str(root), "--name", "sample")
    repo_id = indexed["repository_id"]

    listed = run_json(capsys, "repos", "list")
    assert listed["project_id"] == os.environ["CODEBASE_MCP_PROJECT"]
    assert [r["id"] for r in listed["repositories"]] == [repo_id]
    assert run_json(capsys, "repos") == listed  # list is the default action
    one = run_json(capsys, "repos", "get", repo_id)
    assert one["name"] == "sample" and one["file_count"] == 2 and one["path"] == str(root)

    assert main(["repos"]) == 0
    text = capsys.readouterr().out
    assert repo_id in text and "sample" in text and str(root) in text

    deleted = run_json(capsys, "repos", "delete", repo_id)
    assert deleted["deleted"] is True and deleted["files_deleted"] == 2
    assert run_json(capsys, "repos")["repositories"] == []
    code, line = fails(capsys, "repos", "get", repo_id)
    assert code == 2 and line.startswith("REPOSITORY_NOT_FOUND: ")
    code, line = fails(capsys, "repos", "delete", repo_id)
    assert code == 2 and line.startswith("REPOSITORY_NOT_FOUND: ")


def test_task_lifecycle(capsys: pytest.CaptureFixture[str]) -> None:
    task = run_json(
        capsys,
        "tasks",
        "create",
        "Add retries",
        "--description",
        "wrap the client",
        "--ref",
        "docs/plan.md",
        "--ref",
        "https://example.org/spec",
    )
    assert task["status"] == "need to be done"
    assert task["planning_references"] == ["docs/plan.md", "https://example.org/spec"]
    tid = task["id"]

    updated = run_json(
        capsys,
        "tasks",
        "update",
        tid,
        "--status",
        "completed",
        "--branch",
        "feat/retry",
        "--commit",
        SHA,
        "--notes",
        "done",
    )
    assert updated["status"] == "complete" and updated["completed_at"] is not None
    assert updated["branches"] == ["feat/retry"] and updated["commits"] == [SHA]
    assert run_json(capsys, "tasks", "get", tid) == updated

    run_json(capsys, "tasks", "create", "Second")
    page = run_json(capsys, "tasks", "list", "--limit", "1")
    assert page["total_count"] == 2 and page["has_more"] is True and page["success"] is True
    assert set(page["tasks"][0]) == {"id", "title", "status", "created_at", "updated_at"}
    done = run_json(capsys, "tasks", "list", "--status", "complete", "--full")
    assert [t["id"] for t in done["tasks"]] == [tid] and done["tasks"][0]["notes"] == "done"
    by_branch = run_json(capsys, "tasks", "list", "--branch", "feat/retry", "--offset", "0")
    assert [t["id"] for t in by_branch["tasks"]] == [tid]

    assert main(["tasks"]) == 0
    text = capsys.readouterr().out
    assert "Add retries" in text and "Second" in text and "1-2 of 2 tasks" in text
    assert main(["tasks", "get", tid]) == 0
    assert "feat/retry" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["tasks", "list", "--limit", "0"], "INVALID_LIMIT: --limit must be between 1 and 100"),
        (["tasks", "list", "--offset", "-1"], "VALIDATION_ERROR: --offset=-1: "),
        (["tasks", "list", "--status", "later"], "INVALID_STATUS: Invalid status: later."),
        (["tasks", "get", "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"], "TASK_NOT_FOUND: "),
        (
            ["tasks", "update", "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77", "--notes", "x"],
            "TASK_NOT_FOUND: ",
        ),
        (["tasks", "get", "no-such-task"], "VALIDATION_ERROR: "),
        (["tasks", "create", "  "], "VALIDATION_ERROR: title='  ': "),
        (["tasks", "create", "t", "--ref", "x" * 501], "VALIDATION_ERROR: --ref="),
        (["tasks", "list", "--limit", "many"], "VALIDATION_ERROR: argument --limit: "),
        (["repos", "get", "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"], "REPOSITORY_NOT_FOUND: "),
        (
            ["search", "x", "--repository-id", "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"],
            "REPOSITORY_NOT_FOUND: ",
        ),
        (["repos", "get", "no-such-repo"], "VALIDATION_ERROR: "),
        # A blank project is refused (never the default), by what reads and what creates.
        (["repos", "--project", ""], "VALIDATION_ERROR: --project='': is blank: leave it out"),
        (["search", "x", "--project", " "], "VALIDATION_ERROR: --project=' ': is blank"),
        (["tasks", "create", "t", "--project", ""], "VALIDATION_ERROR: --project='': is blank"),
        (["jobs", "--project", ""], "VALIDATION_ERROR: --project='': is blank"),
        (["search", "x", "--file-type", "p" * 33], "VALIDATION_ERROR: --file-type="),
        (["search", "x", "--language", "l" * 65], "VALIDATION_ERROR: --language="),
        (["search", "x", "--directory", "d" * 4097], "VALIDATION_ERROR: --directory="),
        (["tasks", "list", "--branch", "b" * 256], "VALIDATION_ERROR: --branch="),
    ],
)
def test_bad_input_is_coded_with_exit_code_2(
    argv: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line = fails(capsys, *argv)
    assert code == 2 and line.startswith(start), line


def test_a_bad_task_update_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    tid = run_json(capsys, "tasks", "create", "t")["id"]
    for flag, value, start in (
        ("--commit", "abc", "VALIDATION_ERROR: --commit='abc': "),
        ("--branch", "two words", "VALIDATION_ERROR: --branch='two words': "),
        ("--title", "x" * 201, "VALIDATION_ERROR: --title="),
        ("--status", "nope", "INVALID_STATUS: "),
    ):
        code, line = fails(capsys, "tasks", "update", tid, flag, value)
        assert code == 2 and line.startswith(start), line
    # Nothing to change: refused, naming the flags (updated_at is not bumped).
    code, line = fails(capsys, "tasks", "update", tid)
    assert code == 2 and line.startswith("VALIDATION_ERROR: fields=[]: no field to change"), line
    assert line.endswith(
        "give 'codebase-mcp tasks update' at least one of --title, --description, --notes, "
        "--status, --branch, --commit"
    ), line
    code, line = fails(capsys, "tasks", "update", tid, "--title", "")
    assert code == 2 and line.startswith("VALIDATION_ERROR: --title='': "), line


def test_an_unknown_project_is_an_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra_projects: list[str]
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    run_json(capsys, "index", str(root))  # the test's own project exists
    ghost = new_project_id()
    extra_projects.append(ghost)
    for argv in (
        ["search", "retry"],
        ["repos"],
        ["repos", "list"],
        ["repos", "get", "r"],
        ["repos", "delete", "r"],
        ["tasks"],
        ["tasks", "get", "t"],
        ["tasks", "update", "t", "--notes", "x"],
        ["search", "retry", "--repo", str(root)],
    ):
        code, line = fails(capsys, *argv, "--project", ghost)
        assert code == 2, line
        assert line.startswith(f"VALIDATION_ERROR: --project='{ghost}': no such project; known: ")
        assert os.environ["CODEBASE_MCP_PROJECT"] in line
    assert ghost not in project_ids(capsys)

    # What writes a project creates it, as index_repository and create_task do.
    run_json(capsys, "tasks", "create", "first", "--project", ghost)
    assert ghost in project_ids(capsys)
    indexed_into = new_project_id()
    extra_projects.append(indexed_into)
    assert run_json(capsys, "index", str(root), "--project", indexed_into)["files_indexed"] == 2
    listed = run_json(capsys, "repos", "--project", indexed_into)
    assert listed["project_id"] == indexed_into and len(listed["repositories"]) == 1


def test_exit_codes_of_the_console_script(tmp_path: Path) -> None:
    """A real process: 0 ok, 2 bad input / unknown id, 1 a runtime failure; one line each."""
    exe = Path(sys.executable).with_name("codebase-mcp")

    def run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(exe), *argv],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=120,
            check=False,
        )

    ok = run("projects", "--json")
    assert ok.returncode == 0, ok.stderr
    assert isinstance(json.loads(ok.stdout)["projects"], list)
    missing = run("tasks", "get", "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77")
    assert missing.returncode == 2 and missing.stderr.startswith("TASK_NOT_FOUND: ")
    ghost = run("repos", "--project", "never made")
    assert ghost.returncode == 2
    assert ghost.stderr.startswith("VALIDATION_ERROR: --project='never made': no such project")
    down = run(
        "repos",
        DATABASE_URL="postgresql://nobody@127.0.0.1:9/none",
        CODEBASE_MCP_CONNECT_TIMEOUT="1",
    )
    assert down.returncode == 1 and down.stderr.startswith("DATABASE_ERROR: "), down.stderr
    for proc in (missing, ghost, down):
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
