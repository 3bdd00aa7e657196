"""What ``tools/list`` says of each tool beyond its parameters.

Every tool's listing enters the assistant's context in every session (a test holds them to a
budget), so it says what helps choose and call a tool, and no more:

- hints (MCP ToolAnnotations): a careful client asks the user before a tool that is not
  read-only, and warns before a destructive one; idempotent: the same call again changes
  nothing more. No tool reaches beyond the server's index and the allowed directories
  (openWorldHint false).
- no output schema (``output_schema=None``): ours would only say "an object" (the tools
  return JSON objects whose fields docs/tools.md names); they still arrive as structured
  content.
- ``LeanSchemas``: pydantic's spelling of an optional parameter, shortened.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp.server.transforms import Transform
from fastmcp.tools.base import Tool

READ_ONLY: dict[str, Any] = {"readOnlyHint": True, "openWorldHint": False}


def writes(*, destructive: bool, idempotent: bool) -> dict[str, Any]:
    """The hints of a tool that changes something (all four said: MCP's defaults for a tool
    that is not read-only are destructive and not idempotent)."""
    return {
        "readOnlyHint": False,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }


def lean(prop: dict[str, Any]) -> dict[str, Any]:
    """The same constraint in fewer characters: no ``"default": null`` (leaving a parameter
    out of ``required`` says it may be left out), and ``{"anyOf": [{"type": T, ...},
    {"type": "null"}]}`` as ``{"type": [T, "null"], ...}`` (as zod-based servers spell it).
    An enum keeps its ``anyOf``: folding it would put null among the values listed."""
    out = {k: v for k, v in prop.items() if not (k == "default" and v is None)}
    options = out.get("anyOf")
    if (
        isinstance(options, list)
        and len(options) == 2
        and options[1] == {"type": "null"}
        and isinstance(options[0].get("type"), str)
        and "enum" not in options[0]
    ):
        del out["anyOf"]
        out = {**options[0], **out, "type": [options[0]["type"], "null"]}
    return out


class LeanSchemas(Transform):
    """Lists every tool with its parameters ``lean``. Arguments are still checked by the
    tool's own pydantic model, which accepts exactly what the shortened schema says."""

    async def list_tools(self, tools: Sequence[Tool]) -> Sequence[Tool]:
        return [_leaned(tool) for tool in tools]


def _leaned(tool: Tool) -> Tool:
    schema = tool.parameters
    properties = {name: lean(prop) for name, prop in schema.get("properties", {}).items()}
    return tool.model_copy(update={"parameters": {**schema, "properties": properties}})
