"""Every error a client sees starts with a stable code (see docs/architecture.md).

Tools raise core errors; ``coded`` turns them into tool errors carrying the code, with the
fix a core error's ``Hint`` asks for said in this interface's terms (tool and parameter
names). Arguments that fail a tool's schema never reach the tool: fastmcp rejects them with
raw pydantic text, which ``CodedErrors`` rewrites into ``VALIDATION_ERROR`` /
``INVALID_LIMIT`` / ``INVALID_STATUS``. Anything else becomes ``INTERNAL_ERROR`` with no internals.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pydantic
from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from codebase_mcp_search.core.errors import CoreError, Hint, ValidationFailed, shorten
from codebase_mcp_search.core.models import TaskStatus
from codebase_mcp_search.core.models.base import NUL_RULE

log = logging.getLogger("codebase_mcp")

INTERNAL = "INTERNAL_ERROR: the server failed unexpectedly; its log (stderr) has the details"

_STATUS_FIELDS = {"status"}
# Names the tools accepted as aliases until their schemas had to declare every name accepted:
# a caller that still sends one is told the name to use.
_RENAMED = {"path": "repo_path", "status_filter": "status"}
_BOUND_ERRORS = {"less_than_equal", "greater_than_equal", "less_than", "greater_than"}


# The fix each hint asks for, in the MCP tools' terms.
FIXES: dict[Hint, str] = {
    Hint.REPOSITORY_ID: "list_repositories gives the ids",
    Hint.TASK_ID: "create_task and list_tasks give the ids",
    Hint.JOB_ID: "start_indexing_background and list_background_jobs give the ids",
    Hint.PROJECT: "list_projects shows them (index_repository, start_indexing_background or "
    "create_task creates one)",
    Hint.FOLLOW_JOB: "follow it with get_job_status, or stop it with cancel_job",
    Hint.ADD_VECTORS: "call index_repository for it to add its vectors (no force_reindex "
    "needed); searches rank it lexically meanwhile",
    Hint.ONE_MODEL: "a project holds vectors of one model: call index_repository with "
    "force_reindex=true using one embedding model, search with mode='lexical' meanwhile, or "
    "use another project_id",
    Hint.SEMANTIC_MODEL: "search with mode='lexical' (or mode='hybrid', which falls back to "
    "lexical without a model), or start the server with CODEBASE_MCP_EMBEDDER=auto or onnx "
    "to load the default local model, then call index_repository again to add vectors",
    Hint.TASK_FIELDS: "pass update_task at least one of those parameters",
}


def tool_text(error: CoreError) -> str:
    """A core error as a client reads it: its code, its message, and this interface's fix;
    never its private detail (paths of the server's files), which ``tool_error`` logs."""
    text = str(error)
    remedy = FIXES.get(error.hint) if error.hint is not None else None
    if remedy:
        text = f"{text}; {remedy}"
    return f"{text} (the server's log has the details)" if error.private else text


def tool_error(error: CoreError) -> ToolError:
    """The tool error a client gets for ``error``; its private detail goes to the log."""
    if error.private:
        log.warning("%s", error.detailed)
    # Expected outcomes (not found, bad input): no traceback in the server log.
    return ToolError(tool_text(error), log_level=logging.INFO)


@contextmanager
def coded() -> Iterator[None]:
    """Re-raise a core error as a tool error whose text starts with its code."""
    try:
        yield
    except CoreError as e:
        raise tool_error(e) from None


def _limit_bounds(schema: dict[str, Any], field: str) -> tuple[Any, Any]:
    prop = schema.get("properties", {}).get(field, {})
    for option in [prop, *prop.get("anyOf", [])]:
        if "minimum" in option or "maximum" in option:
            return option.get("minimum"), option.get("maximum")
    return None, None


def _enum(schema: dict[str, Any], field: str) -> list[Any] | None:
    prop = schema.get("properties", {}).get(field, {})
    for option in [prop, *prop.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
    return None


def _renamed(problem: Any) -> str | None:
    """The parameter to use instead of the unknown one ``problem`` is about, if it is one the
    tools once accepted as an alias."""
    if problem.get("type") not in {"unexpected_keyword_argument", "extra_forbidden"}:
        return None
    loc = problem.get("loc", ())
    return _RENAMED.get(str(loc[0])) if loc else None


def describe_validation(error: pydantic.ValidationError, schema: dict[str, Any]) -> str:
    """One coded line for the first problem of a rejected call, naming field, value and rule."""
    problems = error.errors(include_url=False)
    if not problems:
        return f"VALIDATION_ERROR: {error}"
    # A former alias comes first: its replacement is then missing too, for the same reason.
    first = next((p for p in problems if _renamed(p) in schema.get("properties", {})), None)
    first = first or problems[0]
    loc = [str(part) for part in first.get("loc", ()) if not isinstance(part, int)]
    field = loc[0] if loc else "arguments"
    kind = first.get("type", "")
    value = first.get("input")
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    if field in _STATUS_FIELDS:
        # The statuses the tool's schema lists (task statuses with their aliases).
        valid = _enum(schema, field) or [s.value for s in TaskStatus]
        return f"INVALID_STATUS: Invalid status: {shorten(value)}. Valid values: {valid}{more}"
    if field == "limit" and kind in _BOUND_ERRORS:
        low, high = _limit_bounds(schema, field)
        return f"INVALID_LIMIT: Limit must be between {low} and {high}, got {value}{more}"
    properties = sorted(schema.get("properties", {}))
    if kind in {"unexpected_keyword_argument", "extra_forbidden"}:
        instead = _renamed(first)
        use = f"use {instead} (the parameters are {properties})" if instead in properties else None
        rule = f"unknown parameter; {use or f'the parameters are {properties}'}"
    elif kind == "missing":
        return f"VALIDATION_ERROR: {field}: required parameter is missing{more}"
    else:
        rule = first.get("msg", "invalid")
        enum = schema.get("properties", {}).get(field, {}).get("enum")
        if enum:
            rule = f"must be one of {enum}"
    return f"VALIDATION_ERROR: {field}={shorten(repr(value))}: {rule}{more}"


def nul_field(value: Any, name: str = "arguments", depth: int = 0) -> tuple[str, Any] | None:
    """The first argument (by name) holding a NUL character anywhere inside it, if any."""
    if depth > 32:  # deeper nesting is refused by the schema anyway
        return None
    if isinstance(value, str):
        return (name, value) if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in str(key):
                return (name, key)
            found = nul_field(item, key if depth == 0 else f"{name}.{key}", depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            found = nul_field(item, name, depth + 1)
            if found is not None:
                return found
    return None


class CodedErrors(Middleware):
    """Rewrites schema rejections and unexpected failures into coded tool errors, and refuses
    NUL characters in any argument before a tool runs (no path, name or note needs one, and
    Postgres text cannot hold it)."""

    async def on_call_tool(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]
    ) -> ToolResult:
        found = nul_field(context.message.arguments or {})
        if found is not None:
            field, value = found
            raise ToolError(
                tool_text(ValidationFailed(field, value, NUL_RULE)), log_level=logging.INFO
            )
        try:
            return await call_next(context)
        except NotFoundError:
            names = []
            if context.fastmcp_context is not None:
                names = sorted(t.name for t in await context.fastmcp_context.fastmcp.list_tools())
            raise ToolError(
                f"VALIDATION_ERROR: name={shorten(repr(context.message.name))}: unknown tool; the tools "
                f"are {names}",
                log_level=logging.INFO,
            ) from None
        except ValidationError as e:
            cause = e.__cause__
            if not isinstance(cause, pydantic.ValidationError):
                raise ToolError(f"VALIDATION_ERROR: {e}", log_level=logging.INFO) from None
            schema: dict[str, Any] = {}
            fctx = context.fastmcp_context
            if fctx is not None:
                tool = await fctx.fastmcp.get_tool(context.message.name)
                if tool is not None:
                    schema = tool.parameters
            raise ToolError(describe_validation(cause, schema), log_level=logging.INFO) from None
        except ToolError as e:
            cause = e.__cause__
            if cause is None:  # raised on purpose, already coded
                raise
            if isinstance(cause, CoreError):
                raise tool_error(cause) from None
            # fastmcp logged the traceback already; the client learns nothing of internals.
            raise ToolError(INTERNAL) from None
