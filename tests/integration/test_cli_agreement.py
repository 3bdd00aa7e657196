"""The CLI's ``--json`` has the field names of the MCP tools' responses, tool by tool."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from codebase_mcp_search.entrypoints.cli.main import main
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.factories import write_sample_repo


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


async def tools(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(build_server(Settings(embedder="hash"))) as client:
        return [(await client.call_tool(name, args)).structured_content for name, args in calls]


def shape(value: Any) -> Any:
    """Field names, recursively (the first object stands for a list of objects)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        return [shape(objects[0])] if objects else "list"
    return None


def test_json_field_names_match_the_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "hash")
    root = write_sample_repo(tmp_path / "sample")
    index_cli = cli(capsys, "index", str(root))
    repo_id = index_cli["repository_id"]
    task = cli(capsys, "tasks", "create", "t", "--ref", "plan.md")
    got = {
        "index_repository": index_cli,
        "search_code": cli(capsys, "search", "retry with backoff", "--limit", "2"),
        "list_repositories": cli(capsys, "repos", "list"),
        "list_projects": cli(capsys, "projects", "list"),
        "create_task": task,
        "get_task": cli(capsys, "tasks", "get", task["id"]),
        "update_task": cli(capsys, "tasks", "update", task["id"], "--branch", "b"),
        "list_tasks": cli(capsys, "tasks", "list"),
        "list_tasks full": cli(capsys, "tasks", "list", "--full"),
    }
    calls: list[tuple[str, dict[str, Any]]] = [
        ("index_repository", {"repo_path": str(root)}),
        ("search_code", {"query": "retry with backoff", "limit": 2}),
        ("list_repositories", {}),
        ("list_projects", {}),
        ("create_task", {"title": "t", "planning_references": ["plan.md"]}),
        ("get_task", {"task_id": task["id"]}),
        ("update_task", {"task_id": task["id"], "branch": "b"}),
        ("list_tasks", {}),
        ("list_tasks", {"full_details": True}),
        ("delete_repository", {"repository_id": repo_id}),
    ]
    answers = asyncio.run(tools(calls))
    for (name, args), answer in zip(calls[:-1], answers[:-1], strict=True):
        key = "list_tasks full" if args.get("full_details") else name
        assert shape(got[key]) == shape(answer), key

    # Deleting through the CLI answers as the tool did (the repository is back first).
    cli(capsys, "index", str(root))
    assert shape(cli(capsys, "repos", "delete", repo_id)) == shape(answers[-1])
