"""SQL texts as named statements, and the one place where their text is filled in.

Every statement of this package is a module-level constant beside the code that runs it, and
every value a statement uses is bound ($1, $2, ...). A ``Statement`` is a template whose text
varies only by what this module puts in:

- ``{s}``: a project's schema (or the global one), validated as a name this package builds
  and quoted (``quote_ident``);
- at definition, other constants (``part``: a column list, a clause several statements share);
- at run time, named slots taking only integers and ``Sql`` pieces made here (``piece``): the
  number of a bound parameter (``${p}``); the conditions of a search's filters and the
  branches of an ANN search (``all_of``, ``union_all``); and where Postgres takes no
  parameter: DDL (a partial index's bounds, a storage parameter, a type modifier, an index
  name via ``quote_ident``), and an ANN search's segment bounds and limits, which must be
  constants for the planner to use a partial HNSW index in the plan it caches for the
  statement.

A text is made once per (template, schema, slots) and kept, so filling it in costs a lookup;
asyncpg prepares a statement once per text and connection.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final

_IDENTIFIER = re.compile(r"[a-z0-9_]{1,63}")
_SLOT = re.compile(r"\{(\w+)\}")
# Texts kept: every fixed statement for a few dozen projects, and the search statements of
# the filter shapes and ANN layouts in use.
_KEPT: Final = 4096


class Sql(str):
    """A piece of SQL text made by this module, for a slot of another statement. (What runs is
    a plain ``str``: asyncpg takes no subclass.)"""

    __slots__ = ()


Slot = int | Sql


def quote_ident(name: str) -> Sql:
    """A double-quoted identifier; only ever given names built by this package (schema and
    index names)."""
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"refusing to quote an unexpected identifier: {name!r}")
    return Sql(f'"{name}"')


def part(template: str, **parts: str) -> str:
    """``template`` with the ``{name}`` slots of ``parts`` (constants) filled in now; ``{s}``
    and the run-time slots are left for ``Statement.at``."""
    missing = set(parts) - set(_SLOT.findall(template))
    if missing:
        raise ValueError(f"no slot for {sorted(missing)} in {template[:60]!r}")
    return _SLOT.sub(lambda m: parts.get(m[1], m[0]), template)


class Statement:
    """A named SQL text (see the module docstring). ``parts`` are constants put into the
    template at definition (``part``)."""

    __slots__ = ("template",)

    def __init__(self, template: str, **parts: str) -> None:
        self.template = part(template, **parts) if parts else template

    def at(self, schema: str | None = None, /, **slots: Slot) -> str:
        """The text to run for ``schema`` (the bare name: validated and quoted here) and
        ``slots``."""
        return _text(self.template, schema, tuple(slots.items()))

    def piece(self, schema: str | None = None, /, **slots: Slot) -> Sql:
        """The same text, as a piece for another statement's slot."""
        return _render(self.template, schema, tuple(slots.items()))

    def __repr__(self) -> str:
        return f"Statement({' '.join(self.template.split())[:60]!r})"


@functools.lru_cache(maxsize=_KEPT)
def _render(template: str, schema: str | None, slots: tuple[tuple[str, Slot], ...]) -> Sql:
    values: dict[str, str] = {}
    if schema is not None:
        values["s"] = quote_ident(schema)
    for name, value in slots:
        # An int of Python's (not a bool); text only if made here.
        if type(value) is int or isinstance(value, Sql):
            values[name] = str(value)
        else:
            raise TypeError(f"slot {name!r} takes an int or Sql, not {type(value).__name__}")
    return Sql(template.format_map(values))


@functools.lru_cache(maxsize=_KEPT)
def _text(template: str, schema: str | None, slots: tuple[tuple[str, Slot], ...]) -> str:
    return str(_render(template, schema, slots))


TRUE: Final = Sql("true")


def all_of(conditions: Iterable[Sql]) -> Sql:
    """The conjunction of ``conditions`` (``true`` when there are none)."""
    return _joined(" AND ", conditions) or TRUE


def union_all(branches: Iterable[Sql]) -> Sql:
    """``branches`` (parenthesised queries) as one ``UNION ALL``."""
    return _joined(" UNION ALL ", branches)


def _joined(separator: str, items: Iterable[Sql]) -> Sql:
    parts = list(items)
    for item in parts:
        if not isinstance(item, Sql):
            raise TypeError(f"joining SQL text not made by adapters.postgres.sql: {item!r}")
    return Sql(separator.join(parts))
