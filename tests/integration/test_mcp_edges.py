"""Edges of the MCP tools through a real client: what a failing database tells a client (no
path of the server's files), blank project ids, bounded filter texts, and which tools create
a project."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from codebase_mcp_search.core import defaults
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.conftest import drop_projects, new_project_id
from tests.factories import write_sample_repo


@pytest.fixture
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(build_server(Settings(embedder="hash"))) as c:
        yield c


@pytest.fixture
def extra_projects(pg_url: str) -> Iterator[list[str]]:
    created: list[str] = []
    yield created
    drop_projects(pg_url, created)


async def error_of(c: Client[Any], tool: str, **args: Any) -> str:
    result = await c.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, f"{tool}({args}) succeeded: {result.content}"
    text: str = result.content[0].text
    return text


async def project_ids(c: Client[Any]) -> set[str]:
    result = await c.call_tool("list_projects", {})
    assert result.structured_content is not None
    return {p["id"] for p in result.structured_content["projects"]}


# --- a failing database -----------------------------------------------------------------


async def test_a_database_error_names_no_socket_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hidden = tmp_path / "private-socket-dir"
    monkeypatch.setenv("DATABASE_URL", f"postgresql://u:pw@/db?host={hidden}")
    caplog.set_level(logging.WARNING, logger="codebase_mcp")
    async with Client(build_server(Settings(embedder="none", connect_timeout=2))) as c:
        text = await error_of(c, "list_tasks")
    assert text.startswith("DATABASE_ERROR: "), text
    assert str(hidden) not in text and "private-socket-dir" not in text, text
    assert "pw" not in text and "server's log has the details" in text, text
    assert str(hidden) in caplog.text  # the operator finds it in the server's log


async def test_a_failing_embedded_server_names_no_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("DATABASE_URL")
    blocker = tmp_path / "private-place"
    blocker.write_text("a file where the data directory should be")
    caplog.set_level(logging.WARNING, logger="codebase_mcp")
    settings = Settings(embedder="none", data_dir=blocker / "data")
    async with Client(build_server(settings)) as c:
        text = await error_of(c, "list_tasks")
    assert text.startswith("DATABASE_ERROR: could not start the embedded PostgreSQL"), text
    assert "private-place" not in text and str(tmp_path) not in text, text
    assert "CODEBASE_MCP_DATA_DIR" in text and "server's log has the details" in text, text
    assert str(blocker) in caplog.text


# --- project ids --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("list_tasks", {}),
        ("create_task", {"title": "t"}),
        ("search_code", {"query": "x"}),
        ("list_repositories", {}),
        ("list_background_jobs", {}),
        ("index_repository", {"repo_path": "TMP"}),
        ("start_indexing_background", {"repo_path": "TMP"}),
    ],
)
async def test_a_blank_project_id_is_refused(
    tmp_path: Path, client: Client[Any], tool: str, args: dict[str, Any]
) -> None:
    args = {k: str(tmp_path) if v == "TMP" else v for k, v in args.items()}
    for blank in ("", "   "):
        text = await error_of(client, tool, project_id=blank, **args)
        assert text.startswith(f"VALIDATION_ERROR: project_id={blank!r}: is blank"), text
        assert "leave it out" in text, text


async def test_start_indexing_background_creates_its_project_as_index_repository_does(
    tmp_path: Path, extra_projects: list[str], client: Client[Any]
) -> None:
    # (extra_projects first: its projects are dropped after the server, and its jobs, stop)
    root = write_sample_repo(tmp_path / "repo")
    queued_into = new_project_id()
    extra_projects.append(queued_into)
    started = await client.call_tool(
        "start_indexing_background", {"repo_path": str(root), "project_id": queued_into}
    )
    assert started.structured_content is not None
    assert started.structured_content["project_id"] == queued_into
    assert queued_into in await project_ids(client)
    listed = await client.call_tool("list_background_jobs", {"project_id": queued_into})
    assert listed.structured_content is not None
    assert [j["job_id"] for j in listed.structured_content["jobs"]] == [
        started.structured_content["job_id"]
    ]

    # Listing the jobs of a project that does not exist says so, as the other reading
    # tools do, and names what creates one.
    ghost = new_project_id()
    text = await error_of(client, "list_background_jobs", project_id=ghost)
    assert text.startswith(f"VALIDATION_ERROR: project_id={ghost!r}: no such project"), text
    assert "start_indexing_background" in text
    assert ghost not in await project_ids(client)


# --- bounded texts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "field", "limit", "args"),
    [
        ("search_code", "directory", defaults.MAX_PATH_CHARS, {"query": "x"}),
        ("search_code", "file_type", defaults.MAX_FILE_TYPE_CHARS, {"query": "x"}),
        ("search_code", "language", defaults.MAX_LANGUAGE_CHARS, {"query": "x"}),
        ("list_tasks", "branch", defaults.MAX_BRANCH_CHARS, {}),
    ],
)
async def test_filter_texts_are_bounded(
    client: Client[Any], tool: str, field: str, limit: int, args: dict[str, Any]
) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    schema = tools[tool].input_schema["properties"][field]
    assert schema["maxLength"] == limit and schema["type"] == ["string", "null"]
    text = await error_of(client, tool, **{field: "a" * 1_000_000}, **args)
    assert text.startswith(f"VALIDATION_ERROR: {field}='aaa"), text[:200]
    assert f"at most {limit} characters" in text and len(text) < 300, text[:300]
    # At the limit, it is a filter like any other (a language must also be a known one).
    at_limit = await client.call_tool(tool, {field: "a" * limit, **args}, raise_on_error=False)
    if field == "language":
        assert "unknown language; known: " in at_limit.content[0].text
    else:
        assert not at_limit.is_error, at_limit.content
