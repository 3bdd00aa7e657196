"""One file's syntax tree laid out as pieces: definitions, their parts, and the gaps.

The tree-walking half of ``TreeSitterChunker`` (see ``adapters.treesitter.chunker`` for the
rules it implements): which nodes are definitions, how a definition too large for the budget
is split (a class into its members and header parts, anything else at statement boundaries),
and which rows the code between definitions covers. Sizes and merging are ``LineBudget``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from codebase_mcp_search.adapters.treesitter._grammar import (
    BODY_TYPES,
    CLASS,
    COMMENT_TYPES,
    TRANSPARENT,
    Grammar,
    classify,
    instance_body,
    receiver_type,
    rows,
)
from codebase_mcp_search.adapters.treesitter._lines import LineBudget, Piece

# Nesting deeper than this (classes in classes, namespaces in namespaces, statements in
# statements when looking for split points) is handled as plain lines, keeping recursion bounded.
_MAX_DEPTH = 24


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    category: str
    kind: str
    symbol: str | None
    node: Node
    # Nodes after ``node`` that continue the definition (a body sibling, further equations).
    more: list[Node] = field(default_factory=list)


class AstLayout:
    """One file's syntax tree laid out as pieces: definitions, their parts, and the gaps."""

    def __init__(self, budget: LineBudget, grammar: Grammar, prefix_rows: frozenset[int]) -> None:
        self._budget = budget
        self._grammar = grammar
        self._prefix_rows = prefix_rows

    def run(self, root: Node) -> list[Piece]:
        units, others = self._collect(root.named_children, None, in_class=False, depth=0)
        last = len(self._budget.lines) - 1
        return self._layout(0, last, units, others, "module", None, depth=0)

    def _collect(
        self, items: list[Node], qualifier: str | None, *, in_class: bool, depth: int
    ) -> tuple[list[_Unit], list[Node]]:
        """Definitions among ``items`` (looking through transparent ones) and the other nodes."""
        grammar = self._grammar
        units: list[_Unit] = []
        others: list[Node] = []
        previous: _Unit | None = None  # the definition read from the item right before
        for item in items:
            if previous is not None and item.type in grammar.continuations:
                previous.end = max(previous.end, rows(item)[1])
                previous.more.append(item)
                continue
            found = classify(item, grammar)
            if found is None:
                others.append(item)
                previous = None
                continue
            category, node, name = found
            if category == TRANSPARENT:
                if depth < _MAX_DEPTH:
                    inner_units, inner_others = self._collect(
                        _members(node, grammar.members),
                        qualifier,
                        in_class=in_class,
                        depth=depth + 1,
                    )
                    units.extend(inner_units)
                    others.extend(inner_others)
                else:
                    others.append(item)
                previous = None
                continue
            owner = qualifier
            if category == CLASS:
                kind = "class"
            elif node.type in grammar.receiver_methods:
                kind = "method"
                owner = receiver_type(node) or qualifier
            else:
                kind = "method" if in_class else "function"
            symbol = f"{owner}.{name}" if owner and name else (name or owner)
            first = rows(item)[0]
            last = _own_last(item, self._budget.lines)
            if (
                previous is not None
                and node.type in grammar.clauses
                and (previous.node.type, previous.symbol) == (node.type, symbol)
            ):
                previous.end = max(previous.end, last)
                previous.more.append(node)
                continue
            previous = _Unit(first, last, category, kind, symbol, node)
            units.append(previous)
        return units, others

    def _layout(
        self,
        start: int,
        end: int,
        units: list[_Unit],
        others: list[Node],
        gap_kind: str,
        gap_symbol: str | None,
        depth: int,
    ) -> list[Piece]:
        """Pieces covering ``start..end``: each definition's, and the gaps' between them."""
        placed: list[_Unit] = []
        floor = start
        for unit in sorted(units, key=lambda u: u.start):
            span = self._budget.trim(max(unit.start, start), min(unit.end, end))
            if span is None:
                continue
            first, last = span
            first = self._extend_up(first, floor)
            if placed and first <= placed[-1].end:
                previous = placed[-1]
                if first <= previous.start:
                    previous.end = max(previous.end, last)
                    continue
                previous.end = self._budget.prev_nonblank(first - 1)
            unit.start, unit.end = first, last
            placed.append(unit)
            floor = last + 1
        out: list[Piece] = []
        cursor = start
        for unit in placed:
            self._gap(cursor, unit.start - 1, others, gap_kind, gap_symbol, out)
            pieces, whole = self._unit(unit, depth)
            if not whole:
                for piece in pieces:
                    piece.mergeable = False
            out.extend(pieces)
            cursor = unit.end + 1
        self._gap(cursor, end, others, gap_kind, gap_symbol, out)
        return self._budget.merge_small(out)

    def _unit(self, unit: _Unit, depth: int) -> tuple[list[Piece], bool]:
        """A definition's pieces, and whether they are the whole definition in one piece."""
        budget = self._budget
        if budget.fits(unit.start, unit.end):
            return [Piece(unit.start, unit.end, unit.kind, unit.symbol)], True
        if unit.category == CLASS and depth < _MAX_DEPTH:
            members, others = self._collect(
                _members(unit.node, self._grammar.members),
                unit.symbol,
                in_class=True,
                depth=depth + 1,
            )
            if members:
                gaps = self._grammar.container_gaps
                pieces = self._layout(
                    unit.start, unit.end, members, others, gaps, unit.symbol, depth + 1
                )
                return pieces, False
        # The definition's own first row is where its comments above it end: a cut there, and
        # none inside them (a long doc comment is packed by lines, not cut after its first row).
        own_first = max(rows(unit.node)[0], unit.start)
        cuts = self._cuts([unit.node, *unit.more], unit.start, unit.end, floor=own_first)
        parts = budget.pack(unit.start, unit.end, cuts)
        return [
            Piece(s, e, unit.kind if i == 0 else "block", unit.symbol, mergeable=False)
            for i, (s, e) in enumerate(parts)
        ], False

    def _gap(
        self,
        start: int,
        end: int,
        others: list[Node],
        kind: str,
        symbol: str | None,
        out: list[Piece],
    ) -> None:
        budget = self._budget
        span = budget.trim(start, end)
        if span is None:
            return
        first, last = span
        if out and budget.is_trivial(first, last) and budget.fits(out[-1].start, last):
            out[-1].end = last
            return
        if budget.fits(first, last):
            out.append(Piece(first, last, kind, symbol))
            return
        parts = budget.pack(first, last, self._cuts(others, first, last))
        out.extend(Piece(s, e, kind, symbol, mergeable=False) for s, e in parts)

    def _cuts(self, nodes: list[Node], start: int, end: int, floor: int | None = None) -> list[int]:
        """Rows inside ``start..end`` where a statement (with its comments) begins.

        Statements are children of ``nodes``; children of a statement too large for the
        budget are added too, so that one huge statement can still be cut inside. Comments
        are followed up no higher than ``floor`` (itself a cut), when given.
        """
        budget = self._budget
        density = budget.density(start, end)
        found: set[int] = set()
        lowest = start + 1
        if floor is not None and floor > start:
            found.add(floor)
            lowest = floor
        stack = [(node, 0) for node in nodes]
        while stack:
            node, depth = stack.pop()
            for child in node.named_children:
                first, last = rows(child)
                if last < start or first > end:
                    continue
                if first > start:
                    found.add(self._extend_up(first, min(lowest, first)))
                if (
                    last > first
                    and depth < _MAX_DEPTH
                    and budget.estimate(max(first, start), min(last, end), density)
                    > budget.max_tokens
                ):
                    stack.append((child, depth + 1))
        return sorted(found)

    def _extend_up(self, row: int, floor: int) -> int:
        """``row`` moved up over the comment and attribute rows right above it."""
        while row - 1 >= floor and row - 1 in self._prefix_rows:
            row -= 1
        return row


def _own_last(node: Node, lines: list[str]) -> int:
    """The last row of a definition, without the comments it ends with that are not its own.

    A definition ends at its last token. Comments are no tokens of the language, yet a grammar
    may end a node after some (tree-sitter-scala's indented bodies, ``def f =`` and ``object
    A:``, close where the next token opens: over the blank rows and the next definition's doc
    comment). A trailing comment indented deeper than the definition's first row is inside its
    body, as the language reads indentation, and stays (a Python block holds only such); from
    the first one that is not, the rows belong to what follows. A definition closed by a token
    (``}``, ``end``) ends with it, the comments before it included.
    """
    trailing: list[Node] = []
    current = node
    for _ in range(_MAX_DEPTH):
        children = current.children
        i = len(children)
        while i and (children[i - 1].type in COMMENT_TYPES or _empty(children[i - 1])):
            i -= 1
        trailing[:0] = [c for c in children[i:] if not _empty(c)]
        if not i:
            if children:  # nothing but comments inside: keep the node's own end
                return rows(node)[1]
            break
        current = children[i - 1]
    last = rows(current)[1]
    own_indent = _indent(lines[rows(node)[0]])
    for comment in trailing:
        first, comment_last = rows(comment)
        if first > last and _indent(lines[first]) <= own_indent:
            break
        last = max(last, comment_last)
    return last


def _empty(node: Node) -> bool:
    return node.start_byte == node.end_byte


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _members(node: Node, lists: frozenset[str] = frozenset()) -> list[Node]:
    """A container's items: its children, with its body (member lists: ``lists`` besides
    ``BODY_TYPES``) replaced by its members.

    An instance's body is its anonymous class's (``val x: T = new T { ... }``): the value
    holding it is looked through as well.
    """
    body = node.child_by_field_name("body")
    if body is None or body.type not in BODY_TYPES:
        body = instance_body(node) or body
    # The body and the nodes between it and ``node``.
    through: set[int] = set()
    for _ in range(_MAX_DEPTH):
        if body is None or body.id == node.id:
            break
        through.add(body.id)
        body = body.parent
    items: list[Node] = []
    stack = list(reversed(node.named_children))
    while stack:
        child = stack.pop()
        if child.id in through or child.type in BODY_TYPES or child.type in lists:
            stack.extend(reversed(child.named_children))
        else:
            items.append(child)
    return items
