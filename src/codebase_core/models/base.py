"""What every domain model shares: immutability, no unknown fields, and the clock's zone."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    """An immutable pydantic model that rejects unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (every stored timestamp is)."""
    return datetime.now(UTC)
