"""Every tool over a real MCP client (fastmcp's in-memory transport, Postgres store) with
arbitrary JSON arguments: NUL bytes, huge and negative numbers, wrong types, deep nesting.
Every failure is a coded validation (or not-found) error, never DATABASE_ERROR or
INTERNAL_ERROR, and the server answers afterwards."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core.models import PROJECT_ID_RE
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings

T = TypeVar("T")

ALLOWED = (
    "VALIDATION_ERROR",
    "INVALID_LIMIT",
    "INVALID_STATUS",
    "TASK_NOT_FOUND",
    "JOB_NOT_FOUND",
    "REPOSITORY_NOT_FOUND",
    "DUPLICATE_JOB",
)

texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40
) | st.sampled_from(["\x00", "a\x00b", "/tmp\x00/x", " ", "", "0" * 300, "../..", "pending"])
numbers = st.integers(min_value=-(2**80), max_value=2**80) | st.sampled_from(
    [0, -1, 1, 2**31, 2**63, 2**70, 10**20]
)
scalars = st.none() | st.booleans() | numbers | st.floats(allow_nan=False) | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
deep = st.integers(5, 60).map(lambda n: _nest(n))


def _nest(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


class Portal:
    """An event loop in a thread holding one MCP client, for synchronous hypothesis tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(60)

    def close(self) -> None:
        self.run(self.loop.shutdown_asyncgens())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory, pg_url: str
) -> Iterator[tuple[Portal, Client[Any], dict[str, dict[str, Any]], str]]:
    """One server and client for the module's calls (in a project of its own)."""
    from tests.conftest import drop_projects, new_project_id

    root = tmp_path_factory.mktemp("fuzz-roots")
    project = new_project_id()
    config = Settings(
        database_url=pg_url,
        data_dir=root / "data",
        project=project,
        embedder="hash",
        allowed_roots=[str(root / "allowed")],
        job_queue=f"fuzz-{project}",
    )
    portal = Portal()
    client: Client[Any] = Client(build_server(config))
    portal.run(client.__aenter__())
    tools = {t.name: t.input_schema for t in portal.run(client.list_tools())}
    try:
        yield portal, client, tools, project
    finally:
        portal.run(client.__aexit__(None, None, None))
        portal.close()
        drop_projects(pg_url, [project])


def _arguments(schema: dict[str, Any], project: str) -> st.SearchStrategy[dict[str, Any]]:
    names = sorted(schema.get("properties", {}))
    value = json_values | deep
    picked = (
        st.dictionaries(st.sampled_from(names), value, max_size=len(names))
        if names
        else (st.just({}))
    )
    extra = st.dictionaries(texts, scalars, max_size=2)

    def keep_to_own_project(args: dict[str, Any]) -> dict[str, Any]:
        # A valid id of another project would create it in the shared test database.
        pid = args.get("project_id")
        if isinstance(pid, str) and PROJECT_ID_RE.match(pid.strip()):
            args["project_id"] = project
        return args

    both = st.tuples(picked, st.booleans(), extra).map(lambda t: {**t[0], **(t[2] if t[1] else {})})
    return both.map(keep_to_own_project)


@st.composite
def calls(draw: st.DrawFn, tools: dict[str, dict[str, Any]], project: str) -> tuple[str, Any]:
    name = draw(st.sampled_from(sorted(tools)))
    return name, draw(_arguments(tools[name], project))


def test_any_arguments_give_coded_errors(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
) -> None:
    portal, client, tools, project = fuzzed
    assert len(tools) == 13

    @settings(
        max_examples=600,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(calls(tools, project))
    def one(call: tuple[str, Any]) -> None:
        name, args = call
        result = portal.run(client.call_tool(name, args, raise_on_error=False))
        if result.is_error:
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith(ALLOWED), (name, args, text)
            assert "Traceback" not in text

    one()
    # The server answers afterwards.
    listed = portal.run(client.call_tool("list_tasks", {"project_id": project}))
    assert listed.structured_content is not None


def _refusal(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
    tool: str,
    args: dict[str, Any],
) -> str:
    """The error text of a call that must fail."""
    portal, client, _tools, _project = fuzzed
    result = portal.run(client.call_tool(tool, args, raise_on_error=False))
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, text
    return text


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("index_repository", {"repo_path": "/tmp\x00/x"}, "repo_path"),
        ("index_repository", {"repo_path": "/tmp", "name": "a\x00"}, "name"),
        ("search_code", {"query": "q", "directory": "src\x00"}, "directory"),
        ("search_code", {"query": "q", "file_type": "p\x00y"}, "file_type"),
        ("search_code", {"query": "q", "language": "py\x00"}, "language"),
        ("search_code", {"query": "q", "repository_id": "\x00"}, "repository_id"),
        ("create_task", {"title": "t", "planning_references": ["a\x00"]}, "planning_references"),
        ("create_task", {"title": "t\x00"}, "title"),
        ("update_task", {"task_id": "x\x00", "notes": "n"}, "task_id"),
        ("update_task", {"task_id": "x", "branch": "b\x00"}, "branch"),
        ("list_tasks", {"branch": "main\x00"}, "branch"),
        ("get_job_status", {"job_id": "\x00"}, "job_id"),
    ],
)
def test_a_nul_byte_names_its_field(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
    tool: str,
    args: dict[str, Any],
    field: str,
) -> None:
    text = _refusal(fuzzed, tool, args)
    assert text.startswith(f"VALIDATION_ERROR: {field}="), text
    assert "NUL" in text


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("list_tasks", {"offset": 2**70}, "offset"),
        ("list_tasks", {"limit": True}, "limit"),
        ("list_tasks", {"limit": "5"}, "limit"),
        ("list_tasks", {"full_details": "yes"}, "full_details"),
        ("search_code", {"query": "q", "limit": 5.5}, "limit"),
        ("search_code", {"query": "q", "refresh": 1}, "refresh"),
        ("list_background_jobs", {"offset": -1}, "offset"),
        ("get_task", {"task_id": "not-a-uuid"}, "task_id"),
        ("delete_repository", {"repository_id": "nope"}, "repository_id"),
        ("index_repository", {"repo_path": "/tmp", "force_reindex": "true"}, "force_reindex"),
    ],
)
def test_numbers_and_types_are_strict(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
    tool: str,
    args: dict[str, Any],
    field: str,
) -> None:
    text = _refusal(fuzzed, tool, args)
    assert text.startswith(("VALIDATION_ERROR", "INVALID_LIMIT")), text
    assert field in text


def test_every_integer_parameter_is_bounded(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
) -> None:
    _portal, _client, tools, _project = fuzzed
    for name, schema in tools.items():
        for param, prop in schema.get("properties", {}).items():
            options = [prop, *prop.get("anyOf", [])]
            if any(o.get("type") == "integer" for o in options):
                bounded = [o for o in options if "minimum" in o and "maximum" in o]
                assert bounded, (name, param, prop)


def test_project_ids_are_trimmed_and_unique_whatever_their_case(
    fuzzed: tuple[Portal, Client[Any], dict[str, dict[str, Any]], str],
) -> None:
    portal, client, _tools, project = fuzzed

    def call(tool: str, **args: Any) -> Any:
        return portal.run(client.call_tool(tool, args, raise_on_error=False))

    padded = call("list_tasks", project_id=f"  {project} ")
    assert not padded.is_error and padded.structured_content is not None
    blank = call("list_tasks", project_id=" ")
    assert blank.is_error and blank.content[0].text.startswith("VALIDATION_ERROR: project_id")  # type: ignore[union-attr]
    upper = call("create_task", title="x", project_id=project.upper())
    text = upper.content[0].text  # type: ignore[union-attr]
    assert upper.is_error and text.startswith("VALIDATION_ERROR: project_id") and project in text
