"""What every domain model shares: immutability, no unknown fields, and the clock's zone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from codebase_core.errors import ValidationFailed

MAX_OFFSET = 1_000_000
"""The largest ``offset`` a listing takes (bounded, like every integer a client sends)."""


class FrozenModel(BaseModel):
    """An immutable pydantic model that rejects unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (every stored timestamp is)."""
    return datetime.now(UTC)


NUL_RULE = "must not contain NUL characters (\\x00)"


def no_nul(field: str, value: object) -> None:
    """``ValidationFailed`` for a string holding a NUL character: Postgres text cannot store
    it, and no path, name or note needs one."""
    if isinstance(value, str) and "\x00" in value:
        raise ValidationFailed(field, value, NUL_RULE)


def check_uuid(value: object, field: str, what: str) -> str:
    """An id that is a UUID (``what`` says where ids come from), in any case and with
    surrounding spaces, as its canonical lowercase form."""
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value.strip()))
        except ValueError:
            pass
    raise ValidationFailed(field, value, f"must be {what} (a UUID)")
