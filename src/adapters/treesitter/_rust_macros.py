"""Rust items inside item-level macro blocks, made visible to the parser.

tree-sitter-rust reads a macro's body as a token tree, so items written inside one are never
definitions: ``cfg_rt! { pub fn spawn(..) {..} }`` (a crate's own cfg-gating macros) or
``cfg_if! { if #[cfg(unix)] { fn native() {..} } else { .. } }`` hide every function they
wrap. Such a block is unwrapped in the parser's input only (the chunks keep the file's text):
its head (``cfg_rt! {``) and closing brace become spaces, as do a ``cfg_if``-style block's
``if #[..] {`` / ``} else {`` glue, and the file is parsed again. A block whose unwrapped body
does not parse as items (a macro taking its own syntax, ``impl_num! { i8, visit_i8 }``) is
left as it was. Spaces keep every row and byte column, so the tree's rows are the file's.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node, Parser, Tree

# Nesting unwrapped, outermost first (a cfg block inside a cfg block).
_ROUNDS = 3
_ITEM_PARENTS = frozenset({"source_file", "declaration_list"})
_ITEM_HOLDERS = frozenset(
    {"mod_item", "foreign_mod_item", "impl_item", "trait_item", "declaration_list"}
)
_GLUE_TOKENS = frozenset({b"if", b"else", b"#", b"!"})


def unwrap_item_macros(parser: Parser, source: bytes, tree: Tree) -> Tree:
    """The tree of ``source`` (parsed as ``tree``) with the item-level macro blocks whose
    bodies are items unwrapped; ``tree`` itself when there is none."""
    text = bytearray(source)
    for _ in range(_ROUNDS):
        candidates = [n for n in _item_macros(tree.root_node) if _spans_lines(n)]
        if not candidates:
            break
        kept = _try(parser, text, candidates, _wrapper_spans)
        rest = [n for n in candidates if n.id not in kept]
        kept |= _try(parser, text, rest, _branch_spans)
        if not kept:
            break
        tree = parser.parse(bytes(text))
    return tree


_Spans = Callable[[Node], list[tuple[int, int]]]


def _try(parser: Parser, text: bytearray, candidates: list[Node], spans_of: _Spans) -> set[int]:
    """Blank each candidate's glue (``spans_of``), keep the blanking where the block's region
    then parses without errors, and return the ids of the candidates kept."""
    trial = bytearray(text)
    planned: list[tuple[Node, list[tuple[int, int]]]] = []
    for node in candidates:
        spans = spans_of(node)
        if spans:
            planned.append((node, spans))
            for start, end in spans:
                _blank(trial, start, end)
    if not planned:
        return set()
    errors = _error_ranges(parser.parse(bytes(trial)).root_node)
    kept: set[int] = set()
    for node, spans in planned:
        if not any(s < node.end_byte and node.start_byte < e for s, e in errors):
            kept.add(node.id)
            for start, end in spans:
                _blank(text, start, end)
    return kept


def _item_macros(root: Node) -> list[Node]:
    """Macro invocations standing as items (in a file or a module body), outermost only."""
    found: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if child.type == "macro_invocation" and node.type in _ITEM_PARENTS:
                if _brace_body(child) is not None:
                    found.append(child)
            elif child.type in _ITEM_HOLDERS:
                stack.append(child)
    return found


def _brace_body(node: Node) -> Node | None:
    body = node.named_children[-1] if node.named_children else None
    if body is None or body.type != "token_tree" or not body.text:
        return None
    return body if body.text.startswith(b"{") and body.text.endswith(b"}") else None


def _spans_lines(node: Node) -> bool:
    return node.end_point.row > node.start_point.row


def _wrapper_spans(node: Node) -> list[tuple[int, int]]:
    """``name! {`` and its ``}``: the body is the items."""
    body = _brace_body(node)
    assert body is not None
    return [(node.start_byte, body.start_byte + 1), (body.end_byte - 1, body.end_byte)]


def _branch_spans(node: Node) -> list[tuple[int, int]]:
    """``name! { if #[cfg(..)] { items } else { items } }``: everything but the branches'
    contents, when the body holds only such glue and branches."""
    body = _brace_body(node)
    assert body is not None
    spans = [(node.start_byte, body.start_byte + 1)]
    cursor = body.start_byte + 1
    branches = 0
    for child in body.children[1:-1]:
        raw = child.text or b""
        if child.type == "token_tree" and raw.startswith(b"{"):
            spans.append((cursor, child.start_byte + 1))
            cursor = child.end_byte - 1
            branches += 1
        elif not (raw in _GLUE_TOKENS or (child.type == "token_tree" and raw.startswith(b"["))):
            return []
    spans.append((cursor, body.end_byte))
    return spans if branches else []


def _blank(text: bytearray, start: int, end: int) -> None:
    """Spaces over ``start..end``, line breaks kept."""
    for i in range(start, end):
        if text[i] not in (0x0A, 0x0D):
            text[i] = 0x20


def _error_ranges(root: Node) -> list[tuple[int, int]]:
    """Byte ranges of the tree's ERROR and missing nodes."""
    found: list[tuple[int, int]] = []
    if not root.has_error:
        return found
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append((node.start_byte, max(node.end_byte, node.start_byte + 1)))
            continue
        stack.extend(c for c in node.children if c.has_error)
    return found
