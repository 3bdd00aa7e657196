"""What ``tools/list`` tells a client: its size, each tool's hints, enums and the arguments
accepted (exactly those the schema declares, so a strict client and the server agree)."""

from __future__ import annotations

import json
import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.tools.function_tool import FunctionTool
from pydantic.fields import FieldInfo

from codebase_mcp_search.core.models import JobStatus, TaskStatus
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings

# Every tool's description and schemas, and the server's instructions, enter the assistant's
# context in every session. A change that needs more room shortens something else.
BUDGET = 12_000

# (readOnlyHint, destructiveHint, idempotentHint); None: not sent (meaningless when
# read-only, per the MCP spec).
HINTS: dict[str, tuple[bool, bool | None, bool | None]] = {
    "index_repository": (False, False, True),
    "search_code": (True, None, None),
    "list_repositories": (True, None, None),
    "delete_repository": (False, True, True),
    "list_projects": (True, None, None),
    "create_task": (False, False, False),
    "get_task": (True, None, None),
    "update_task": (False, True, True),
    "list_tasks": (True, None, None),
    "start_indexing_background": (False, False, False),
    "get_job_status": (True, None, None),
    "list_background_jobs": (True, None, None),
    "cancel_job": (False, False, True),
}

UNKNOWN_ID = "0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"
TASK_STATUSES = [s.value for s in TaskStatus] + ["pending", "completed"]


@pytest.fixture
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(build_server(Settings(embedder="hash"))) as c:
        yield c


async def schemas(client: Client[Any]) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in await client.list_tools()}


async def refusal(client: Client[Any], tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, (tool, args, result.content)
    text: str = result.content[0].text
    return text


async def test_tools_list_and_instructions_fit_the_budget(client: Client[Any]) -> None:
    tools = await client.list_tools()
    listed = len(json.dumps([t.model_dump(exclude_none=True) for t in tools]))
    instructions = len(client.instructions or "")
    assert instructions > 0
    assert listed + instructions <= BUDGET, (listed, instructions)


async def test_each_tool_says_whether_it_changes_anything(client: Client[Any]) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == set(HINTS)
    for name, (read_only, destructive, idempotent) in HINTS.items():
        hints = tools[name].annotations
        assert hints is not None, name
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            read_only,
            destructive,
            idempotent,
        ), name
        # Nothing reaches beyond the server's own index and the allowed directories.
        assert hints.open_world_hint is False, name


def _enum(prop: dict[str, Any]) -> list[Any] | None:
    options = [prop, *prop.get("anyOf", [])]
    return next((o["enum"] for o in options if "enum" in o), None)


async def test_statuses_are_enums(client: Client[Any]) -> None:
    tools = await schemas(client)
    for tool in ("list_tasks", "update_task"):
        assert _enum(tools[tool]["properties"]["status"]) == TASK_STATUSES, tool
    jobs = tools["list_background_jobs"]["properties"]["status"]
    assert _enum(jobs) == [s.value for s in JobStatus]


async def test_every_declared_task_status_is_taken(client: Client[Any]) -> None:
    task = (await client.call_tool("create_task", {"title": "enum"})).structured_content
    assert task is not None
    for status in TASK_STATUSES:
        updated = await client.call_tool("update_task", {"task_id": task["id"], "status": status})
        assert updated.structured_content is not None
        assert updated.structured_content["status"] == TaskStatus.parse(status).value
        listed = await client.call_tool("list_tasks", {"status": status})
        assert listed.structured_content is not None
        assert [t["id"] for t in listed.structured_content["tasks"]] == [task["id"]]


async def test_null_is_taken_where_the_schema_allows_it(client: Client[Any]) -> None:
    """The listing spells optional parameters ``"type": [T, "null"]``: null is taken."""
    tools = await schemas(client)
    for tool, args in (("search_code", {"query": "x"}), ("list_tasks", {})):
        nullable = [
            name
            for name, prop in tools[tool]["properties"].items()
            if "null" in prop.get("type", []) or {"type": "null"} in prop.get("anyOf", [])
        ]
        assert len(nullable) >= 2, (tool, nullable)
        result = await client.call_tool(tool, {**args, **dict.fromkeys(nullable)})
        assert not result.is_error, (tool, result.content)


async def test_an_argument_the_schema_does_not_declare_is_refused(
    client: Client[Any], tmp_path: Path
) -> None:
    # Former aliases: a strict client could not send them; now no client can.
    for tool, args, replacement in (
        ("index_repository", {"path": str(tmp_path)}, "repo_path"),
        ("start_indexing_background", {"path": str(tmp_path)}, "repo_path"),
        ("list_tasks", {"status_filter": "complete"}, "status"),
    ):
        assert next(iter(args)) not in (await schemas(client))[tool]["properties"]
        text = await refusal(client, tool, args)
        assert text.startswith(f"VALIDATION_ERROR: {next(iter(args))}="), (tool, text)
        assert f"use {replacement}" in text, (tool, text)
    # Every tool, its required arguments given: only the undeclared one is wrong.
    valid = {"repo_path": str(tmp_path), "query": "x", "title": "t"}
    for tool, schema in (await schemas(client)).items():
        args = {name: valid.get(name, UNKNOWN_ID) for name in schema.get("required", [])}
        text = await refusal(client, tool, {**args, "undeclared": 1})
        assert text.startswith("VALIDATION_ERROR: undeclared=1: unknown parameter"), (tool, text)
    # A former alias sent to a tool that never had it is only unknown.
    text = await refusal(client, "search_code", {"query": "x", "path": "/x"})
    assert "use " not in text and "unknown parameter" in text


async def test_the_server_accepts_no_name_its_schema_leaves_out() -> None:
    """No parameter carries an alias (or any other name) outside the declared properties."""
    mcp = build_server(Settings(embedder="hash"))
    for tool in await mcp.list_tools():
        assert isinstance(tool, FunctionTool), tool.name
        declared = set(tool.parameters["properties"])
        hints = typing.get_type_hints(tool.fn, include_extras=True)
        for param, hint in hints.items():
            fields = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, FieldInfo)]
            for field in fields:
                aliases = field.validation_alias, field.alias
                assert aliases == (None, None), (tool.name, param, aliases)
            if param not in ("ctx", "return"):
                assert param in declared, (tool.name, param)
