"""Exit codes, and the one coded line the CLI prints for an error.

The codes are the MCP tools' (``core.errors``); the text names the flag the user typed
(``--limit``, ``--project``) where the core names a field (``limit``, ``project_id``), and adds
the fix a core error's ``Hint`` asks for in CLI syntax.
"""

from __future__ import annotations

import argparse
import shlex

from codebase_mcp_search.core.errors import (
    CoreError,
    Hint,
    InvalidLimit,
    InvalidStatus,
    JobNotFound,
    RepositoryNotFound,
    TaskNotFound,
    ValidationFailed,
)

EXIT_OK = 0
EXIT_ERROR = 1
"""A runtime failure: DATABASE_ERROR, EMBEDDER_UNAVAILABLE, MODEL_MISMATCH, REPOSITORY_BUSY,
an indexing run whose status is ``failed``, a doctor check that fails."""
EXIT_USAGE = 2
"""Bad input or an unknown id: VALIDATION_ERROR, INVALID_LIMIT, INVALID_STATUS, *_NOT_FOUND."""
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""stdout was closed early (``| head``), as a process killed by SIGPIPE reports."""

_BAD_INPUT: tuple[type[CoreError], ...] = (
    ValidationFailed,
    InvalidLimit,
    InvalidStatus,
    TaskNotFound,
    RepositoryNotFound,
    JobNotFound,
)

# Core field names whose flag has another name (the rest are ``--`` + the field, with '-'),
# each with the arguments that may set it, by the command's argument names (``dest``).
_FIELD_DEST: dict[str, tuple[str, ...]] = {
    "project_id": ("project",),
    "planning_references": ("ref",),
    "full_details": ("full",),
    "force_reindex": ("force",),
    "repo_path": ("path", "index", "repo"),
}

# The fix each hint asks for, in the command line's terms ({job_id} and {path} from the
# error's details; the path shell-quoted).
FIXES: dict[Hint, str] = {
    Hint.REPOSITORY_ID: "'codebase-mcp repos' lists the ids",
    Hint.TASK_ID: "'codebase-mcp tasks' lists the ids",
    Hint.JOB_ID: "'codebase-mcp jobs' lists the ids",
    Hint.PROJECT: "'codebase-mcp projects' lists them ('codebase-mcp index PATH' creates one)",
    Hint.FOLLOW_JOB: "follow it with 'codebase-mcp jobs status {job_id}', or stop it with "
    "'codebase-mcp jobs cancel {job_id}'",
    Hint.ADD_VECTORS: "re-index it to add its vectors with 'codebase-mcp index {path}' (no "
    "--force needed); searches rank it lexically meanwhile",
    Hint.ONE_MODEL: "a project holds vectors of one model: re-index with 'codebase-mcp index "
    "{path} --force' using one embedding model, search with --mode lexical meanwhile, or use "
    "another project (--project)",
    Hint.SEMANTIC_MODEL: "search with --mode lexical (hybrid, the default, falls back to it), "
    "or get a semantic model: CODEBASE_MCP_EMBEDDER=auto (or onnx, the built-in local model) "
    "and re-index with 'codebase-mcp index PATH'; 'codebase-mcp doctor' shows which embedder "
    "is in use",
    Hint.TASK_FIELDS: "give 'codebase-mcp tasks update' at least one of --title, --description, "
    "--notes, --status, --branch, --commit",
}


def fix(error: CoreError) -> str | None:
    """The fix ``error.hint`` asks for, in the command line's terms."""
    template = FIXES.get(error.hint) if error.hint is not None else None
    if template is None:
        return None
    return template.format(
        job_id=error.details.get("job_id", "ID"),
        path=shlex.quote(str(error.details.get("path") or "PATH")),
    )


def exit_code(error: CoreError) -> int:
    """``EXIT_USAGE`` for bad input and unknown ids, ``EXIT_ERROR`` for everything else."""
    return EXIT_USAGE if isinstance(error, _BAD_INPUT) else EXIT_ERROR


def flag_of(field: str, parser: argparse.ArgumentParser | None) -> str:
    """The argument of ``parser`` that sets ``field`` as the user typed it: its option
    (``--limit``), or for a positional one its name in the usage line (``ID``, ``path``);
    ``field`` itself when the command does not take it."""
    if parser is None:
        return field
    for dest in _FIELD_DEST.get(field, (field,)):
        for action in parser._actions:
            if action.dest != dest:
                continue
            if action.option_strings:
                return max(action.option_strings, key=len)
            return str(action.metavar or action.dest)
    return field


def error_line(error: CoreError, parser: argparse.ArgumentParser | None = None) -> str:
    """One line: the code, then the message in the CLI's terms."""
    text = str(error)
    field = error.details.get("field")
    if isinstance(field, str):
        flag = flag_of(field, parser)
        limit = isinstance(error, InvalidLimit) and error.message.startswith(field.capitalize())
        if flag != field and (limit or error.message.startswith(f"{field}=")):
            text = f"{error.code}: {flag}{error.message[len(field) :]}"
    remedy = fix(error)
    if remedy:
        text = f"{text}; {remedy}"
    if error.private:  # this machine's own paths: the user here may read them
        text = f"{text} ({error.private})"
    return " ".join(text.split("\n"))
