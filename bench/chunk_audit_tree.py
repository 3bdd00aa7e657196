"""The pure half of ``bench.chunk_audit``: one file's syntax tree and chunks, audited.

Given a parsed file, the grammar entry the chunker uses for it (``GRAMMARS[lang]``) and the
line spans of the chunks the chunker made, ``audit_tree`` reports:

- rows under ERROR nodes (and how many MISSING nodes the parser invented);
- definition-like nodes (``*_definition``, ``*_declaration``, ``*_item``, ... see
  ``DEFINITION_LIKE``) whose type the grammar entry neither lists nor looks through, each
  marked whether it sits where the chunker looks for definitions (an *item*: a top-level node,
  a member of a transparent node or of a class-like definition, as ``AstLayout._collect`` walks
  them) or deeper (a parameter, a local);
- every unclassified item (any type), with its size in rows: what the chunker leaves to the
  ``module`` / ``header`` gaps;
- definitions the grammar classifies, outside any function or any class kept whole, that the
  chunker never reaches (a bash function inside a loop), by the type of their parent;
- doc comments left behind: for each definition the grammar classifies (at any depth), the
  comment rows right above it (over attribute / decorator rows, no blank row between) that no
  chunk holding the definition's first row also holds.

Rows are 0-based here; ``bench.chunk_audit`` prints them 1-based.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from codebase_mcp_search.adapters.treesitter._grammar import (
    CLASS,
    PREFIX_TYPES,
    TRANSPARENT,
    Grammar,
    classify,
    rows,
)

# The chunker's own member walk (a container's body replaced by its items), so that "item"
# means exactly the nodes the chunker classifies.
from codebase_mcp_search.adapters.treesitter._layout import _members as members

# Type names that read as a definition or declaration in the tree-sitter grammars we ship
# (Go's ``type_spec``/``method_elem``, C's ``preproc_function_def``, Kotlin's ``type_alias``).
DEFINITION_LIKE = re.compile(
    r"(?:^|_)(?:definition|declaration|item|specifier|signature|spec|elem|alias|def)$"
)
# Same bound as the layout's recursion.
MAX_DEPTH = 24
# Non-comment node types that may sit between a doc comment and its definition.
_ATTRIBUTE_TYPES = frozenset(t for t in PREFIX_TYPES if "comment" not in t)


def listed(grammar: Grammar) -> frozenset[str]:
    """Every node type a grammar entry names (definitions, containers, wrappers, values)."""
    return (
        grammar.functions
        | grammar.classes
        | grammar.transparent
        | grammar.conditionals
        | grammar.wrappers
        | grammar.variables
        | grammar.fields
    )


def is_definition_like(node_type: str) -> bool:
    return DEFINITION_LIKE.search(node_type) is not None


@dataclass(frozen=True, slots=True)
class LeftComment:
    """A definition whose doc comment (``comment_rows`` rows) lost ``left`` rows to another
    chunk; ``row`` is the definition's first row."""

    row: int
    comment_rows: int
    left: int
    symbol: str | None
    # Whether the comment's top row went to a chunk that starts above the comment (the
    # definition before it took it) rather than to a part of the definition's own.
    absorbed: bool


@dataclass(slots=True)
class TreeAudit:
    """What ``audit_tree`` found in one file (rows 0-based)."""

    # Non-blank rows under ERROR nodes (below the root when the root itself is one).
    error_rows: int = 0
    root_error: bool = False
    missing: int = 0
    # (node type, first row, whether at an item position)
    unlisted: list[tuple[str, int, bool]] = field(default_factory=list)
    # (node type, first row, rows spanned): unclassified items
    items: list[tuple[str, int, int]] = field(default_factory=list)
    # (parent type, first row, symbol): definitions outside any function or whole class that the
    # chunker never reaches (inside a loop, a call, a value the grammar does not look into)
    hidden: list[tuple[str, int, str | None]] = field(default_factory=list)
    definitions: int = 0
    with_comment: int = 0
    left: list[LeftComment] = field(default_factory=list)


def item_nodes(
    root: Node, grammar: Grammar, spans: Sequence[tuple[int, int]] = ()
) -> Iterator[tuple[Node, bool]]:
    """Every node at a position where the chunker looks for definitions, and whether it is
    one. A transparent node is looked through and not yielded; a class's members are items
    when no chunk of ``spans`` holds the whole class (the chunker splits only those); an
    unclassified wrapper (``export``, an expression statement) stands for what it wraps."""
    stack = [(child, 0) for child in reversed(root.named_children)]
    while stack:
        item, depth = stack.pop()
        found = classify(item, grammar)
        if found is None:
            inner = (
                item.child_by_field_name("declaration") if item.type in grammar.wrappers else None
            )
            if inner is None and item.type in grammar.wrappers and item.named_children:
                inner = item.named_children[-1]
            yield inner or item, False
            continue
        category, node, _ = found
        if category != TRANSPARENT:
            yield item, True
        if depth >= MAX_DEPTH:
            continue
        if category == TRANSPARENT or (category == CLASS and not _whole(item, spans)):
            stack.extend((child, depth + 1) for child in reversed(members(node, grammar.members)))


def _whole(node: Node, spans: Sequence[tuple[int, int]]) -> bool:
    first, last = rows(node)
    return any(s <= first and e >= last for s, e in spans)


def _starts_line(node: Node, source: bytes) -> bool:
    column = node.start_point.column
    return not source[node.start_byte - column : node.start_byte].strip()


def audit_tree(
    root: Node, source: bytes, grammar: Grammar, spans: Sequence[tuple[int, int]]
) -> TreeAudit:
    """Audit one parsed file against the chunks' 0-based inclusive row ``spans``."""
    out = TreeAudit()
    names = listed(grammar)
    item_ids: dict[int, bool] = {}
    for node, classified in item_nodes(root, grammar, spans):
        item_ids[node.id] = classified
        if not classified and "comment" not in node.type:
            first, last = rows(node)
            out.items.append((node.type, first, last - first + 1))
    error_rows: set[int] = set()
    comment_rows: set[int] = set()
    attribute_rows: set[int] = set()
    # Definition node id -> (first row of the outermost node naming it, symbol).
    definitions: dict[int, tuple[int, str | None]] = {}
    stack = [(root, False)]
    while stack:
        node, inside = stack.pop()
        node_type = node.type
        if node.is_missing:
            out.missing += 1
        if node_type == "ERROR" and node is not root:
            first, last = rows(node)
            error_rows.update(range(first, last + 1))
        elif ("comment" in node_type or node_type in _ATTRIBUTE_TYPES) and _starts_line(
            node, source
        ):
            first, last = rows(node)
            target = comment_rows if "comment" in node_type else attribute_rows
            target.update(range(first, last + 1))
        if node_type not in names and is_definition_like(node_type):
            out.unlisted.append((node_type, node.start_point.row, item_ids.get(node.id) is False))
        found = classify(node, grammar)
        defines = found is not None and found[0] != TRANSPARENT
        if found is not None and defines and found[1].id not in definitions:
            definitions[found[1].id] = (node.start_point.row, found[2])
            if not inside and node.id not in item_ids:
                parent = node.parent.type if node.parent is not None else ""
                out.hidden.append((parent, node.start_point.row, found[2]))
        # Members of a class the chunker splits are reached (as items) or should be.
        if defines and found is not None and (found[0] != CLASS or _whole(node, spans)):
            inside = True
        stack.extend((child, inside) for child in reversed(node.named_children))
    lines = source.split(b"\n")
    out.error_rows = sum(1 for r in error_rows if r < len(lines) and lines[r].strip())
    out.root_error = root.type == "ERROR"
    starts = sorted(spans)
    for row, symbol in sorted(set(definitions.values()), key=lambda d: d[0]):
        out.definitions += 1
        block = _comment_block(row, comment_rows, attribute_rows)
        if not block:
            continue
        out.with_comment += 1
        holding = _containing(starts, row)
        left = [r for r in block if not any(s <= r for s, _ in holding)]
        if left:
            top = min(block)
            absorbed = any(s < top for s, _ in _containing(starts, top))
            out.left.append(LeftComment(row, len(block), len(left), symbol, absorbed))
    return out


def _comment_block(row: int, comments: set[int], attributes: set[int]) -> list[int]:
    """The comment rows in the run of comment / attribute rows right above ``row``."""
    block: list[int] = []
    above = row - 1
    while above >= 0 and (above in comments or above in attributes):
        if above in comments:
            block.append(above)
        above -= 1
    return block


def _containing(starts: list[tuple[int, int]], row: int) -> list[tuple[int, int]]:
    """The spans (sorted by start) that hold ``row``."""
    i = bisect_right(starts, (row, float("inf")))
    return [span for span in starts[:i] if span[1] >= row]


def span_chunks(spans: Sequence[tuple[int, int]], start: int, end: int) -> tuple[bool, int]:
    """For a target's rows ``start..end``: whether one chunk holds all of them, and how many
    chunks overlap them."""
    inside = any(s <= start and e >= end for s, e in spans)
    overlapping = sum(1 for s, e in spans if s <= end and e >= start)
    return inside, overlapping
