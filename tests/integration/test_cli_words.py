"""First use from the command line (issue 35): empty answers say why, filters that cannot
match are refused, and every error speaks in flags and commands, never in the MCP tools'
names."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from codebase_mcp_search.core.models import ProgressPhase
from codebase_mcp_search.entrypoints.cli.main import main
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.requests import index_request
from codebase_mcp_search.entrypoints.settings import Settings
from tests.factories import write_sample_repo
from tests.integration.test_mcp_server import call, error_of

UUID = "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"

# What the MCP tools call things; a CLI user types flags and commands instead.
MCP_WORDS = re.compile(
    r"get_job_status|cancel_job|list_repositories|index_repository|search_code|list_tasks|"
    r"get_task|create_task|update_task|list_projects|delete_repository|list_background_jobs|"
    r"start_indexing_background|repo_path|task_id|repository_id|job_id|project_id|"
    r"force_reindex|planning_references|response_format|detail_level"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_search_with_nothing_indexed_says_how_to_index(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "tasks", "create", "the project exists, with no repository")
    code, out, err = run(capsys, "search", "anything")
    assert code == 0, err
    assert "Nothing is indexed in project" in out and "'codebase-mcp index PATH'" in out


async def test_a_repository_being_indexed_is_shown_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    for i in range(6):
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"m{i}.py").write_text(f"def helper_{i}():\n    return {i}\n")
    seen: dict[str, tuple[int, str, str]] = {}
    looked: list[bool] = []

    async def look(phase: ProgressPhase, done: int, total: int) -> None:
        # Between two batches of the first run, the command line looks (another thread).
        # Progress can be reported again while it looks: only the first report looks, or two
        # threads would read (and empty) one capture.
        if phase == "writing" and done and not looked:
            looked.append(True)
            seen["repos"] = await asyncio.to_thread(run, capsys, "repos")
            seen["search"] = await asyncio.to_thread(run, capsys, "search", "zebra quokka")

    settings = Settings(embedder="none", index_batch_files=1)
    async with open_codebase(settings) as cb:
        await cb.index(index_request(root), progress=look, vectors=False)
    code, out, err = seen["repos"]
    assert code == 0, err
    row = next(line for line in out.splitlines() if "repo" in line.split())
    assert " indexing " in f" {row} ", out
    code, out, err = seen["search"]
    assert code == 0, err
    assert "No results yet for 'zebra quokka': repo is still being indexed" in out


def test_filtered_empty_lists_name_the_filter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    run_json(capsys, "index", str(root))
    run_json(capsys, "tasks", "create", "a task")
    code, out, _ = run(capsys, "tasks", "list", "--status", "in-progress")
    assert code == 0
    assert "No tasks with --status in-progress in project" in out and "(it has 1;" in out
    code, out, _ = run(capsys, "tasks", "list", "--branch", "nowhere")
    assert "No tasks with --branch nowhere" in out
    code, out, _ = run(capsys, "jobs", "list", "--status", "failed")
    assert code == 0 and "No jobs with --status failed in project" in out
    code, out, _ = run(capsys, "search", "slugify", "--directory", "docs", "--language", "go")
    assert code == 0
    assert "No results for 'slugify' with --directory docs, --language go (" in out


def test_directory_and_repo_name_a_folder_inside_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    (root / "docs").mkdir()
    (root / "docs" / "slugs.md").write_text("# Slugify\n\nslugify makes a title a slug.\n")
    repo_id = run_json(capsys, "index", str(root))["repository_id"]

    def paths(*argv: str) -> set[str]:
        found = run_json(capsys, "search", "slugify", *argv)["results"]
        return {r["file_path"] for r in found}

    assert paths() == {"pkg/names.py", "docs/slugs.md"}
    assert paths("--directory", "pkg") == {"pkg/names.py"}
    assert paths("--directory", str(root / "pkg")) == {"pkg/names.py"}
    assert paths("--directory", str(root / "docs") + "/") == {"docs/slugs.md"}
    # --repo on a folder of the repository: that repository, in that folder.
    assert paths("--repo", str(root / "pkg")) == {"pkg/names.py"}
    found = run_json(capsys, "search", "slugify", "--repo", str(root / "docs"))["results"]
    assert {r["repository_id"] for r in found} == {repo_id}
    assert paths("--repo", str(root / "pkg"), "--directory", "pkg/names.py") == {"pkg/names.py"}
    assert len(run_json(capsys, "repos")["repositories"]) == 1  # nothing new was indexed

    for argv, start in (
        (["--repo", str(root / "pkg"), "--directory", "docs"], "VALIDATION_ERROR: --directory="),
        (["--directory", str(tmp_path)], "VALIDATION_ERROR: --directory="),
        (["--repo", str(tmp_path)], "REPOSITORY_NOT_FOUND: no repository is indexed at "),
    ):
        code, out, err = run(capsys, "search", "slugify", *argv)
        assert code == 2 and err.startswith(start) and not out, err


def test_an_unknown_language_is_refused_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "search", "x", "--language", "klingon")
    assert code == 2 and not out
    assert err.startswith("VALIDATION_ERROR: --language='klingon': unknown language; known: ")
    assert "python" in err and "typescript" in err


def test_cli_errors_never_name_mcp_tools_or_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_sample_repo(tmp_path / "sample")
    file = root / "pkg" / "names.py"
    bad: list[list[str]] = [
        ["tasks", "get", "nope"],
        ["tasks", "get", UUID],
        ["tasks", "update", "nope", "--notes", "x"],
        ["tasks", "update", UUID, "--status", "bogus"],
        ["tasks", "list", "--status", "bogus"],
        ["tasks", "create", "t", "--ref", "x" * 501],
        ["repos", "get", "nope"],
        ["repos", "get", UUID],
        ["repos", "delete", "nope"],
        ["jobs", "status", "nope"],
        ["jobs", "status", UUID],
        ["jobs", "cancel", "nope"],
        ["jobs", "list", "--status", "bogus"],
        ["search", "x", "--repository-id", "nope"],
        ["search", "x", "--repository-id", UUID],
        ["search", "x", "--language", "klingon"],
        ["search", "x", "--directory", "/elsewhere"],
        ["search", "x", "--repo", str(tmp_path / "nope")],
        ["search", "x", "--index", str(tmp_path / "nope")],
        ["search", "x", "--index", str(file)],
        ["index", str(tmp_path / "nope")],
        ["index", str(file)],
        ["index", str(file), "--background"],
        ["search", "x", "--mode", "semantic"],  # no embedder in these tests
    ]
    run_json(capsys, "index", str(root), "--background")
    bad.append(["index", str(root), "--background"])  # DUPLICATE_JOB
    said: list[str] = []
    for argv in bad:
        code, out, err = run(capsys, *argv)
        assert code != 0 and err.strip(), (argv, out)
        said.append(err)
        assert not MCP_WORDS.search(err), (argv, err)
    assert any(line.startswith("DUPLICATE_JOB: ") for line in said)
    # What a job's commands print names the commands too.
    job_id = run_json(capsys, "jobs")["jobs"][0]["job_id"]
    code, out, err = run(capsys, "jobs", "cancel", job_id)
    assert code == 0 and out.startswith(f"Job {job_id} ") and not MCP_WORDS.search(out), err
    message = run_json(capsys, "index", str(root), "--background")["message"]
    assert not MCP_WORDS.search(message) and "'codebase-mcp jobs status " in message, message


async def test_the_search_tool_has_the_same_filter_rules(tmp_path: Path, pg_env: str) -> None:
    root = write_sample_repo(tmp_path / "sample")
    async with Client(build_server(Settings(embedder="none"))) as c:
        await call(c, "create_task", title="the project exists, with no repository")
        empty = await call(c, "search_code", query="slugify")
        assert empty["results"] == [] and "Nothing is indexed" in empty["message"]
        await call(c, "index_repository", repo_path=str(root))
        found = await call(c, "search_code", query="slugify", directory=str(root / "pkg"))
        assert [r["file_path"] for r in found["results"]] == ["pkg/names.py"]
        text = await error_of(c, "search_code", query="x", language="klingon")
        assert text.startswith("VALIDATION_ERROR: language='klingon': unknown language; known:")
        text = await error_of(c, "search_code", query="x", directory=str(tmp_path / "other"))
        assert text.startswith("VALIDATION_ERROR: directory=") and "not inside" in text
