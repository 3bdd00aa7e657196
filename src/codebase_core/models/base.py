"""What every domain model shares: immutability, no unknown fields, and the clock's zone."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

from codebase_mcp_search.core.defaults import MAX_OFFSET
from codebase_mcp_search.core.errors import Hint, InvalidLimit, ValidationFailed


class FrozenModel(BaseModel):
    """An immutable pydantic model that rejects unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def trusted(cls, values: Mapping[str, Any]) -> Self:
        """The model holding ``values`` as they are: every field given, already valid (read
        back from a store that validated it on the way in). What ``model_construct`` does
        for a complete set of fields, without its per-field loop: a search reads hundreds
        of chunks per call. ``tests/unit/test_models.py`` checks the result against a
        validated model."""
        # In the fields' order, as validation stores them (dumps list them in it); a field
        # missing is a KeyError here, not a model without it.
        return cls._holding({name: values[name] for name in cls.__pydantic_fields__})

    @classmethod
    def trusted_values(cls, values: Iterable[Any]) -> Self:
        """``trusted`` for the fields' values given in the fields' order (a row selected in
        it); values past the last field are ignored. Zipped rather than looked up by name,
        about a third cheaper per row."""
        ordered = dict(zip(cls.__pydantic_fields__, values, strict=False))
        if len(ordered) != len(cls.__pydantic_fields__):
            raise ValueError(f"{cls.__name__}: {len(ordered)} values for its fields")
        return cls._holding(ordered)

    @classmethod
    def _holding(cls, ordered: dict[str, Any]) -> Self:
        model = cls.__new__(cls)
        object.__setattr__(model, "__dict__", ordered)
        object.__setattr__(model, "__pydantic_fields_set__", set(ordered))
        object.__setattr__(model, "__pydantic_extra__", None)
        object.__setattr__(model, "__pydantic_private__", None)
        return model


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (every stored timestamp is)."""
    return datetime.now(UTC)


NUL_RULE = "must not contain NUL characters (\\x00)"


def no_nul(field: str, value: object) -> None:
    """``ValidationFailed`` for a string holding a NUL character: Postgres text cannot store
    it, and no path, name or note needs one."""
    if isinstance(value, str) and "\x00" in value:
        raise ValidationFailed(field, value, NUL_RULE)


def at_most(field: str, value: object, limit: int) -> None:
    """``ValidationFailed`` for a string longer than ``limit`` characters (every text a
    client sends is bounded, so no request carries megabytes into a query)."""
    if isinstance(value, str) and len(value) > limit:
        raise ValidationFailed(
            field, value, f"must be at most {limit} characters, got {len(value)}"
        )


def check_uuid(value: object, field: str, what: str, hint: Hint) -> str:
    """An id that is a UUID (``what`` names its kind, ``hint`` where such ids come from), in any
    case and with surrounding spaces, as its canonical lowercase form."""
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value.strip()))
        except ValueError:
            pass
    raise ValidationFailed(field, value, f"must be {what} (a UUID)", hint=hint)


class Page(FrozenModel):
    """A slice of a listing: at most ``limit`` items after the first ``offset``."""

    limit: int
    offset: int = 0

    @classmethod
    def build(cls, limit: object, offset: object, *, default: int, maximum: int) -> Page:
        """Validate raw paging fields (None: ``default`` and 0), raising coded errors that name
        the field."""
        if limit is None:
            limit = default
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationFailed("limit", limit, f"must be an integer from 1 to {maximum}")
        if not 1 <= limit <= maximum:
            raise InvalidLimit(limit, 1, maximum)
        if offset is None:
            offset = 0
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
            raise ValidationFailed("offset", offset, f"must be an integer from 0 to {MAX_OFFSET}")
        return cls(limit=limit, offset=offset)
