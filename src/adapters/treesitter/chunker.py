"""TreeSitterChunker: cuts source files into definition-sized chunks with tree-sitter.

Lines are ``codebase_core.models.split_lines(text)``: ``\\n``, ``\\r\\n`` and ``\\r`` end a
line (a form feed or U+2028 does not, so numbers match editors); a trailing break adds no line. A chunk's ``content`` is its lines joined by ``"\\n"``; the
parser reads the text rebuilt that way so that its rows are exactly these lines.

Kinds:

- ``function``: a top-level function (also a JS/TS ``const f = () => ...``).
- ``method``: a function inside a class-like definition, or a Go method; symbol
  ``Class.method`` (nested classes give ``Outer.Inner.method``).
- ``class``: a class or its equivalent (struct, union, enum, interface, trait, impl, protocol,
  extension, object, record, Ruby module, Go type, C typedef'd struct).
- ``header``: the lines of a class split into parts that are not in a member definition
  (signature, docstring, fields; the symbol is the class).
- ``module``: code between definitions (imports, constants, top-level statements).
- ``block``: a second or later part of a definition split at statement boundaries; it keeps
  the definition's symbol.
- ``text``: a line window of a file without a grammar (the symbol is a Markdown heading).

Definitions include the comments, decorators and attributes on the lines right above them.
A definition that fits ``max_tokens`` is one chunk. A class that does not is split into its
members plus header chunks; any other definition is split at statement boundaries (inside a
statement too large on its own, else by lines) with ``overlap_lines`` of overlap, at most half
a part, the first part keeping the signature. Neighbouring pieces under ``min_tokens`` merge
until the merge reaches ``min_tokens`` and only while it stays within a few lines of its
smallest member; a piece at or over ``min_tokens`` never merges, though lines holding only
closers (``}``, ``end``, ``#endif``) join the chunk before them. A merged chunk takes the
kind of its first definition and the symbols of all, joined by ``", "``. Namespaces,
preprocessor blocks and ERROR nodes are looked through, so unparseable text still ends up in
``module`` chunks that cover every non-blank line. The one chunk that may exceed
``max_tokens`` is a single line that alone is over it.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import cast

from tree_sitter import Language, Node, Parser, Query, QueryCursor
from tree_sitter_language_pack import SupportedLanguage, get_language

from adapters.treesitter._grammar import (
    BODY_TYPES,
    CLASS,
    GRAMMARS,
    PREFIX_MARKS,
    PREFIX_TYPES,
    TRANSPARENT,
    Grammar,
    classify,
    receiver_type,
    rows,
)
from adapters.treesitter._lines import LineBudget, Piece
from codebase_core.models import ChunkDraft, split_lines
from codebase_core.ports import TokenCounter

AST_LANGUAGES = frozenset(GRAMMARS)

# Nesting deeper than this (classes in classes, namespaces in namespaces, statements in
# statements when looking for split points) is handled as plain lines, keeping recursion bounded.
_MAX_DEPTH = 24

_MD_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_MD_FENCE = re.compile(r" {0,3}(?:```|~~~)")

# tree-sitter-bash's scanner (every release so far) tests the character after "{", "." or a digit
# with isdigit() when looking for a brace range ({1..5}); one above U+00FF indexes past glibc's
# ctype table and can crash the process. There it is parsed as "_"s, one per byte, keeping every
# row and byte column.
_BASH_ISDIGIT_UNSAFE = re.compile(rb"(?<=[{.0-9])[\xc4-\xf4][\x80-\xbf]*")


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    category: str
    kind: str
    symbol: str | None
    node: Node


class TreeSitterChunker:
    """tree-sitter (tree-sitter-language-pack) chunking of source files; owns cached parsers."""

    def __init__(
        self,
        token_counter: TokenCounter,
        max_tokens: int = 512,
        min_tokens: int = 48,
        overlap_lines: int = 3,
        window_lines: int = 60,
    ) -> None:
        if max_tokens < 1 or min_tokens < 0 or overlap_lines < 0 or window_lines < 1:
            raise ValueError("max_tokens, window_lines >= 1 and min_tokens, overlap_lines >= 0")
        self._counter = token_counter
        self._max_tokens = max_tokens
        self._min_tokens = min_tokens
        self._overlap_lines = overlap_lines
        self._window_lines = window_lines
        self._local = threading.local()
        self._grammars: dict[str, tuple[Language, Query | None] | None] = {}

    # Pickled as its settings (for indexing worker processes); parsers are rebuilt lazily.
    def __reduce__(self) -> tuple[type[TreeSitterChunker], tuple[TokenCounter, int, int, int, int]]:
        settings = (self._max_tokens, self._min_tokens, self._overlap_lines, self._window_lines)
        return (TreeSitterChunker, (self._counter, *settings))

    def chunk(self, path: str, text: str, language: str | None) -> list[ChunkDraft]:
        """Chunks of one file (see the module docstring for kinds and rules)."""
        if not text or text.isspace():
            return []
        lines = split_lines(text)
        budget = LineBudget(
            lines,
            self._counter,
            max_tokens=self._max_tokens,
            min_tokens=self._min_tokens,
            overlap_lines=self._overlap_lines,
            window_lines=self._window_lines,
        )
        pieces = None
        if language is not None and language in GRAMMARS:
            # The text as its lines rejoined with "\n", which makes tree rows exactly these lines.
            source = "\n".join(lines) if "\r" in text else text.removesuffix("\n")
            pieces = self._ast_pieces(language, source, budget)
        if pieces is None:
            pieces = _text_pieces(budget, language)
        return _drafts(budget, pieces)

    def _ast_pieces(self, language: str, source: str, budget: LineBudget) -> list[Piece] | None:
        loaded = self._load(language)
        if loaded is None:
            return None
        lang, prefix_query = loaded
        # Parsers are not thread-safe: one per thread and language.
        parsers: dict[str, Parser] | None = getattr(self._local, "parsers", None)
        if parsers is None:
            parsers = self._local.parsers = {}
        parser = parsers.get(language)
        if parser is None:
            parser = parsers[language] = Parser(lang)
        encoded = source.encode("utf-8", "replace")
        if language == "bash":
            encoded = _BASH_ISDIGIT_UNSAFE.sub(lambda m: b"_" * len(m[0]), encoded)
        root = parser.parse(encoded).root_node
        marks = PREFIX_MARKS.get(language)
        if marks is not None and not any(mark in encoded for mark in marks):
            prefix_rows: frozenset[int] = frozenset()
        else:
            prefix_rows = _prefix_rows(prefix_query, root, budget.lines)
        return _AstLayout(budget, GRAMMARS[language], prefix_rows).run(root)

    def _load(self, language: str) -> tuple[Language, Query | None] | None:
        """The grammar and its comment/attribute query, loaded once per language."""
        if language not in self._grammars:
            try:
                lang = get_language(cast(SupportedLanguage, language))
            except LookupError:
                self._grammars[language] = None
            else:
                kinds = [k for k in PREFIX_TYPES if lang.id_for_node_kind(k, True) is not None]
                pattern = " ".join(f"({k})" for k in kinds)
                query = Query(lang, f"[{pattern}] @p") if kinds else None
                self._grammars[language] = (lang, query)
        return self._grammars[language]


def _prefix_rows(query: Query | None, root: Node, lines: list[str]) -> frozenset[int]:
    """Rows that start with a comment, decorator or attribute."""
    if query is None:
        return frozenset()
    found: set[int] = set()
    for node in QueryCursor(query).captures(root).get("p", ()):
        first, last = rows(node)
        if first >= len(lines):
            continue
        if lines[first].encode("utf-8", "replace")[: node.start_point.column].strip():
            continue
        found.update(range(first, min(last, len(lines) - 1) + 1))
    return frozenset(found)


class _AstLayout:
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
        units: list[_Unit] = []
        others: list[Node] = []
        for item in items:
            found = classify(item, self._grammar)
            if found is None:
                others.append(item)
                continue
            category, node, name = found
            if category == TRANSPARENT:
                if depth < _MAX_DEPTH:
                    inner_units, inner_others = self._collect(
                        _members(node), qualifier, in_class=in_class, depth=depth + 1
                    )
                    units.extend(inner_units)
                    others.extend(inner_others)
                else:
                    others.append(item)
                continue
            owner = qualifier
            if category == CLASS:
                kind = "class"
            elif node.type in self._grammar.receiver_methods:
                kind = "method"
                owner = receiver_type(node) or qualifier
            else:
                kind = "method" if in_class else "function"
            symbol = f"{owner}.{name}" if owner and name else (name or owner)
            first, last = rows(item)
            units.append(_Unit(first, last, category, kind, symbol, node))
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
                _members(unit.node), unit.symbol, in_class=True, depth=depth + 1
            )
            if members:
                pieces = self._layout(
                    unit.start, unit.end, members, others, "header", unit.symbol, depth + 1
                )
                return pieces, False
        cuts = self._cuts([unit.node], unit.start, unit.end)
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

    def _cuts(self, nodes: list[Node], start: int, end: int) -> list[int]:
        """Rows inside ``start..end`` where a statement (with its comments) begins.

        Statements are children of ``nodes``; children of a statement too large for the
        budget are added too, so that one huge statement can still be cut inside.
        """
        budget = self._budget
        density = budget.density(start, end)
        found: set[int] = set()
        stack = [(node, 0) for node in nodes]
        while stack:
            node, depth = stack.pop()
            for child in node.named_children:
                first, last = rows(child)
                if last < start or first > end:
                    continue
                if first > start:
                    found.add(self._extend_up(first, start + 1))
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


def _members(node: Node) -> list[Node]:
    """A container's items: its children, with its body (member list) replaced by its members."""
    body = node.child_by_field_name("body")
    body_id = body.id if body is not None else None
    items: list[Node] = []
    stack = list(reversed(node.named_children))
    while stack:
        child = stack.pop()
        if child.id == body_id or child.type in BODY_TYPES:
            stack.extend(reversed(child.named_children))
        else:
            items.append(child)
    return items


def _text_pieces(budget: LineBudget, language: str | None) -> list[Piece]:
    """Line windows; Markdown is first cut at headings (outside fenced code)."""
    last = len(budget.lines) - 1
    sections = _markdown_sections(budget.lines) if language == "markdown" else [(0, last, None)]
    pieces: list[Piece] = []
    for start, end, title in sections:
        parts = budget.pack(start, end, (), max_lines=budget.window_lines)
        whole = len(parts) == 1
        pieces.extend(Piece(s, e, "text", title, mergeable=whole) for s, e in parts)
    return budget.merge_small(pieces)


def _markdown_sections(lines: list[str]) -> list[tuple[int, int, str | None]]:
    starts: list[tuple[int, str | None]] = [(0, None)]
    fenced = False
    for row, line in enumerate(lines):
        if _MD_FENCE.match(line):
            fenced = not fenced
        elif not fenced and _MD_HEADING.match(line):
            title = line.strip().lstrip("#").strip()[:200] or None
            if row == 0:
                starts[0] = (0, title)
            else:
                starts.append((row, title))
    ends = [row - 1 for row, _ in starts[1:]] + [len(lines) - 1]
    return [(row, end, title) for (row, title), end in zip(starts, ends, strict=True)]


def _drafts(budget: LineBudget, pieces: list[Piece]) -> list[ChunkDraft]:
    """Chunk drafts from pieces: trimmed, re-checked against the budget, sorted, deduplicated."""
    spans: dict[tuple[int, int], tuple[str, str | None]] = {}
    for piece in pieces:
        span = budget.trim(piece.start, piece.end)
        if span is None:
            continue
        first, last = span
        if last > first and not budget.fits(first, last):
            parts = budget.pack(first, last, (), max_lines=budget.window_lines)
        else:
            parts = [span]
        for i, part in enumerate(parts):
            spans.setdefault(part, (piece.kind if i == 0 else "block", piece.symbol))
    return [
        ChunkDraft(
            start_line=s + 1,
            end_line=e + 1,
            content=budget.content(s, e),
            symbol=symbol,
            kind=kind,
            token_count=budget.tokens(s, e),
        )
        for (s, e), (kind, symbol) in sorted(spans.items())
    ]
