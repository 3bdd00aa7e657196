"""A core error's fix, said by each interface in its own terms: the MCP tools name tools and
parameters, the CLI names commands and flags, and neither borrows the other's words."""

from __future__ import annotations

import re

import pytest

from codebase_mcp_search.core.errors import CoreError, DuplicateJob, Hint, ValidationFailed
from codebase_mcp_search.entrypoints.cli import errors as cli
from codebase_mcp_search.entrypoints.mcp import errors as mcp

MCP_WORDS = re.compile(
    r"\b(?:list_repositories|list_tasks|create_task|list_background_jobs|get_job_status|"
    r"cancel_job|index_repository|start_indexing_background|list_projects|force_reindex|"
    r"project_id)\b|mode='"
)
CLI_WORDS = re.compile(r"codebase-mcp|--[a-z]")


@pytest.mark.parametrize("hint", list(Hint))
def test_every_hint_has_a_fix_in_each_interface(hint: Hint) -> None:
    error = CoreError("something is wrong", hint=hint, job_id="j1", path="/repos/my repo")
    said_by_mcp = mcp.tool_text(error)
    said_by_cli = cli.error_line(error)
    assert said_by_mcp.startswith("INTERNAL_ERROR: something is wrong; ")
    assert said_by_cli.startswith("INTERNAL_ERROR: something is wrong; ")
    assert not CLI_WORDS.search(said_by_mcp), said_by_mcp
    assert not MCP_WORDS.search(said_by_cli), said_by_cli


def test_the_cli_fills_in_the_job_and_a_quoted_path() -> None:
    error = DuplicateJob("job j1 is already running", hint=Hint.FOLLOW_JOB, job_id="j1")
    assert "'codebase-mcp jobs status j1'" in cli.error_line(error)
    assert "get_job_status" in mcp.tool_text(error)
    moved = CoreError("x", hint=Hint.ONE_MODEL, path="/repos/my repo")
    assert "codebase-mcp index '/repos/my repo' --force" in cli.error_line(moved)


def test_an_error_without_a_hint_is_said_as_it_is() -> None:
    error = ValidationFailed("limit", 0, "must be at least 1")
    assert mcp.tool_text(error) == str(error)
    assert cli.error_line(error) == str(error)
