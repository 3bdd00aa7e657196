"""Domain errors. Each carries a stable machine-readable ``code`` that clients see.

Messages are neutral: they say what is wrong in the core's field names, never how to fix it in
one interface's words. Where the fix depends on the interface (which tool or command lists ids,
how to re-index), the error carries a ``Hint``; each entry point appends the fix in its own
syntax (MCP parameter and tool names, CLI flags and commands).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class Hint(StrEnum):
    """The fix an interface appends to an error, in its own terms."""

    REPOSITORY_ID = "repository_id"
    """Where repository ids come from."""
    TASK_ID = "task_id"
    """Where task ids come from."""
    JOB_ID = "job_id"
    """Where job ids come from."""
    PROJECT = "project"
    """Which projects exist, and what creates one."""
    FOLLOW_JOB = "follow_job"
    """A job already runs for the repository (``details["job_id"]``): follow or cancel it."""
    ADD_VECTORS = "add_vectors"
    """A repository without vectors: an incremental re-index adds them (``details["path"]``)."""
    ONE_MODEL = "one_model"
    """Vectors of another model: a forced re-index under one model (``details["path"]``)."""
    SEMANTIC_MODEL = "semantic_model"
    """A semantic search with no embedding model in use."""
    TASK_FIELDS = "task_fields"
    """An update of a task that sets none of the fields an update may set."""


def shorten(value: object, limit: int = 80) -> str:
    """``value`` as text for an error message, cut to ``limit`` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CoreError(Exception):
    """Root of every error the domain raises; ``code`` is stable on the wire.

    ``message`` is what any client may read. ``private`` is what only the server's operator
    may: paths of the server's file system, a driver's own text. A remote interface (the MCP
    server) logs it and says the log has it; a local one (the command line) prints it.
    """

    code: ClassVar[str] = "INTERNAL_ERROR"

    def __init__(
        self,
        message: str,
        *,
        hint: Hint | None = None,
        private: str | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.private = private
        self.details = details

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    @property
    def detailed(self) -> str:
        """The error with its private detail, for the server's log."""
        return f"{self} [{self.private}]" if self.private else str(self)


class ValidationFailed(CoreError):
    """A field breaks a rule; the message names the field, the value and the rule (``field``
    and ``rule`` are also kept apart, for a caller that reports them in its own words)."""

    code = "VALIDATION_ERROR"

    def __init__(self, field: str, value: Any, rule: str, *, hint: Hint | None = None) -> None:
        super().__init__(f"{field}={shorten(repr(value))}: {rule}", hint=hint, field=field)
        self.field = field
        self.rule = rule


class InvalidLimit(CoreError):
    """A limit outside its allowed range."""

    code = "INVALID_LIMIT"

    def __init__(self, value: int, low: int, high: int, field: str = "limit") -> None:
        super().__init__(
            f"{field.capitalize()} must be between {low} and {high}, got {value}", field=field
        )


class InvalidStatus(CoreError):
    """An unknown task status, or a transition the state machine forbids."""

    code = "INVALID_STATUS"


class TaskNotFound(CoreError):
    """No task has the given id."""

    code = "TASK_NOT_FOUND"


class JobNotFound(CoreError):
    """No job has the given id."""

    code = "JOB_NOT_FOUND"


class JobLeaseLost(CoreError):
    """A worker acted on a job it no longer holds (another worker took it over, or it ended)."""

    code = "JOB_LEASE_LOST"


class JobFailed(CoreError):
    """A job ended with an error; carries that error's own code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # the failed job's code, per instance


class RepositoryNotFound(CoreError):
    """No indexed repository has the given id or path."""

    code = "REPOSITORY_NOT_FOUND"


class DuplicateJob(CoreError):
    """An active job already covers that repository."""

    code = "DUPLICATE_JOB"


class RepositoryBusy(CoreError):
    """Another process is indexing the same repository and the caller asked not to wait."""

    code = "REPOSITORY_BUSY"


class StoreUnavailable(CoreError):
    """The database is unreachable, timed out, or failed. Where the server keeps its files
    (the embedded server's data directory) is ``private``, never in the message."""

    code = "DATABASE_ERROR"


class EmbedderUnavailable(CoreError):
    """The embedding server or model cannot be used."""

    code = "EMBEDDER_UNAVAILABLE"


class ModelMismatch(CoreError):
    """A repository indexed with one embedding model is used with another."""

    code = "MODEL_MISMATCH"


class Cancelled(CoreError):
    """Long work stopped because its cancellation token was set."""

    code = "CANCELLED"


class FileUnreadable(CoreError):
    """One file could not be read or decoded; indexing records it and goes on."""

    code = "FILE_UNREADABLE"
