"""TreeSitterChunker: cuts source files into definition-sized chunks with tree-sitter.

Lines are ``core.models.split_lines(text)``: ``\\n``, ``\\r\\n`` and ``\\r`` end a
line (a form feed or U+2028 does not, so numbers match editors); a trailing break adds no
line. A chunk's ``content`` is its lines joined by ``"\\n"``; the parser reads the text rebuilt
that way so that its rows are exactly these lines.

Kinds:

- ``function``: a top-level function (also a JS/TS ``const f = () => ...``).
- ``method``: a function inside a class-like definition, or a Go method; symbol
  ``Class.method`` (nested classes give ``Outer.Inner.method``).
- ``class``: a class or its equivalent (struct, union, enum, interface, trait, impl, protocol,
  extension, object, record, Ruby module, Go type, C typedef'd struct, Scala package object and
  typeclass instance: ``implicit val x: T = new T { ... }``, ``given x: T with ...``).
- ``header``: the lines of a class split into parts that are not in a member definition
  (signature, docstring, fields; the symbol is the class).
- ``module``: code between definitions (imports, constants, top-level statements).
- ``block``: a second or later part of a definition split at statement boundaries; it keeps
  the definition's symbol.
- ``text``: a line window of a file without a grammar (the symbol is a Markdown heading).

Definitions include the comments, decorators and attributes on the lines right above them,
and end at their last token: comments after it belong to what follows unless indented into
the definition's body.
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

This module parses; the rest of the package does the laying out: ``_layout`` (a syntax tree
as pieces), ``_text`` (files without a grammar), ``_lines`` (token budget, packing, merging)
and ``_grammar`` (what a language's node types mean, and how definitions are read), with the
languages' entries in ``_grammar_table`` and ``_grammar_more``; ``_rust_macros`` and
``_cfamily`` prepare the parser's input (Rust items inside macro blocks; C/C++ macro lines and
``#if`` branches). The defaults of the budget are ``core.defaults.CHUNK_*``, as the product
runs.
"""

from __future__ import annotations

import re
import threading
from typing import NamedTuple, cast

from tree_sitter import Language, Node, Parser, Query, QueryCursor
from tree_sitter_language_pack import SupportedLanguage, get_language

from codebase_mcp_search.adapters.treesitter import _grammar_more, _grammar_table
from codebase_mcp_search.adapters.treesitter._cfamily import (
    blank_macro_lines,
    error_weight,
    first_branches,
)
from codebase_mcp_search.adapters.treesitter._grammar import (
    PREFIX_MARKS,
    PREFIX_TYPES,
    rows,
)
from codebase_mcp_search.adapters.treesitter._layout import AstLayout
from codebase_mcp_search.adapters.treesitter._lines import LineBudget, Piece
from codebase_mcp_search.adapters.treesitter._rust_macros import unwrap_item_macros
from codebase_mcp_search.adapters.treesitter._text import text_pieces
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.models import ChunkDraft, split_lines
from codebase_mcp_search.core.ports import TokenCounter

GRAMMARS = {**_grammar_table.GRAMMARS, **_grammar_more.GRAMMARS}
PREFIX_PATTERNS = {**_grammar_table.PREFIX_PATTERNS, **_grammar_more.PREFIX_PATTERNS}
AST_LANGUAGES = frozenset(GRAMMARS)
# Lines repeated between consecutive windows of a file without a grammar, and a window's size.
OVERLAP_LINES = 3
WINDOW_LINES = 60

# tree-sitter-bash's scanner (every release so far) tests the character after "{", "." or a digit
# with isdigit() when looking for a brace range ({1..5}); one above U+00FF indexes past glibc's
# ctype table and can crash the process. There it is parsed as "_"s, one per byte, keeping every
# row and byte column.
_BASH_ISDIGIT_UNSAFE = re.compile(rb"(?<=[{.0-9])[\xc4-\xf4][\x80-\xbf]*")
# Languages read before their preprocessor runs (see ``_cfamily``).
_C_FAMILY = frozenset(("c", "cpp"))


class TreeSitterChunker:
    """tree-sitter (tree-sitter-language-pack) chunking of source files; owns cached parsers."""

    def __init__(
        self,
        token_counter: TokenCounter,
        max_tokens: int = defaults.CHUNK_MAX_TOKENS,
        min_tokens: int = defaults.CHUNK_MIN_TOKENS,
        overlap_lines: int = OVERLAP_LINES,
        window_lines: int = WINDOW_LINES,
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
            pieces = text_pieces(budget, language)
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
        root, encoded, prefix_rows = parse(parser, language, source.encode("utf-8", "replace"))
        marks = PREFIX_MARKS.get(language)
        if marks is None or any(mark in encoded for mark in marks):
            prefix_rows |= _prefix_rows(prefix_query, root, budget.lines)
        return AstLayout(budget, GRAMMARS[language], prefix_rows).run(root)

    def _load(self, language: str) -> tuple[Language, Query | None] | None:
        """The grammar and its comment/attribute query, loaded once per language."""
        if language not in self._grammars:
            try:
                lang = get_language(cast(SupportedLanguage, language))
            except LookupError:
                self._grammars[language] = None
            else:
                kinds = [k for k in PREFIX_TYPES if lang.id_for_node_kind(k, True) is not None]
                patterns = [f"({k})" for k in kinds]
                if language in PREFIX_PATTERNS:
                    patterns.append(PREFIX_PATTERNS[language])
                query = Query(lang, f"[{' '.join(patterns)}] @p") if patterns else None
                self._grammars[language] = (lang, query)
        return self._grammars[language]


class Parsed(NamedTuple):
    """A file's tree, the bytes it was parsed from, and rows blanked as a definition's prefix."""

    root: Node
    source: bytes
    prefix_rows: frozenset[int] = frozenset()


def parse(parser: Parser, language: str, encoded: bytes) -> Parsed:
    """The tree the chunker lays out (the parser's input keeps every row and byte column).

    C and C++ are parsed with their macro-only lines blanked (``_cfamily``): those rows go with
    the definition below them, as attributes do. When that tree has errors, the file is parsed
    once more with only the first branch of each ``#if`` kept, and the tree with fewer error
    rows wins (a second parse only for files that need it).
    """
    if language == "bash":
        encoded = _BASH_ISDIGIT_UNSAFE.sub(lambda m: b"_" * len(m[0]), encoded)
    if language not in _C_FAMILY:
        tree = parser.parse(encoded)
        if language == "rust" and b"!" in encoded:
            tree = unwrap_item_macros(parser, encoded, tree)
        return Parsed(tree.root_node, encoded)
    encoded, macro_rows = blank_macro_lines(encoded)
    root = parser.parse(encoded).root_node
    if root.has_error:
        retry = first_branches(encoded)
        if retry != encoded:
            again = parser.parse(retry).root_node
            if error_weight(again) < error_weight(root):
                return Parsed(again, retry, macro_rows)
    return Parsed(root, encoded, macro_rows)


def _prefix_rows(query: Query | None, root: Node, lines: list[str]) -> frozenset[int]:
    """Rows that start with a comment, decorator or attribute.

    A node captured as ``@spaced`` too (Erlang's ``-spec``) also takes the blank rows below it:
    it describes the definition below across them, as OTP's own code writes it.
    """
    if query is None:
        return frozenset()
    found: set[int] = set()
    captures = QueryCursor(query).captures(root)
    for node in captures.get("p", ()):
        first, last = rows(node)
        if first >= len(lines):
            continue
        if lines[first].encode("utf-8", "replace")[: node.start_point.column].strip():
            continue
        end = node.end_point
        if end.row == last < len(lines) and last > first:
            # Zig's doc comments end in the indentation of the line below them: not their row.
            head = lines[last].encode("utf-8", "replace")[: end.column]
            last = last if head.strip() else last - 1
        found.update(range(first, min(last, len(lines) - 1) + 1))
    for node in captures.get("spaced", ()):
        first, row = rows(node)
        while first in found and row + 1 < len(lines) and not lines[row + 1].strip():
            row += 1
            found.add(row)
    return frozenset(found)


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
