"""The pure parts of bench.chunk_audit: one small parsed file against given chunk spans."""

from __future__ import annotations

from bench.chunk_audit import Tally, _same_path
from bench.chunk_audit_tree import audit_tree, is_definition_like, item_nodes, span_chunks
from tree_sitter import Node, Parser
from tree_sitter_language_pack import get_language

from codebase_mcp_search.adapters.treesitter.chunker import GRAMMARS
from codebase_mcp_search.core.models import ChunkDraft

PYTHON = b"x = 1\n# the doc of f\ndef f():\n    return 1\n"


def _parse(language: str, source: bytes) -> Node:
    return Parser(get_language(language)).parse(source).root_node  # type: ignore[arg-type]


def test_doc_comment_kept_with_its_definition_is_not_reported() -> None:
    found = audit_tree(_parse("python", PYTHON), PYTHON, GRAMMARS["python"], [(0, 0), (1, 3)])
    assert (found.definitions, found.with_comment, found.left) == (1, 1, [])


def test_doc_comment_taken_by_the_chunk_above_is_reported_as_absorbed() -> None:
    found = audit_tree(_parse("python", PYTHON), PYTHON, GRAMMARS["python"], [(0, 1), (2, 3)])
    [left] = found.left
    assert (left.row, left.comment_rows, left.left, left.symbol, left.absorbed) == (
        2,
        1,
        1,
        "f",
        True,
    )


def test_doc_comment_cut_off_as_a_part_of_its_own_is_not_absorbed() -> None:
    spans = [(0, 0), (1, 1), (2, 3)]
    found = audit_tree(_parse("python", PYTHON), PYTHON, GRAMMARS["python"], spans)
    assert [c.absorbed for c in found.left] == [False]


def test_unlisted_definition_types_at_item_positions_look_through_wrappers() -> None:
    source = b"export import Foo = Bar.Baz;\nfunction f(): void {}\n"
    root = _parse("typescript", source)
    found = audit_tree(root, source, GRAMMARS["typescript"], [(0, 0), (1, 1)])
    assert ("import_alias", 0, True) in found.unlisted
    assert [(n.type, defines) for n, defines in item_nodes(root, GRAMMARS["typescript"])] == [
        ("import_alias", False),
        ("function_declaration", True),
    ]


def test_class_members_are_items_only_when_the_class_is_split() -> None:
    source = b"class A:\n    def f(self):\n        pass\n    x = 1\n"
    root = _parse("python", source)
    whole = [n.type for n, _ in item_nodes(root, GRAMMARS["python"], [(0, 3)])]
    split = [n.type for n, _ in item_nodes(root, GRAMMARS["python"], [(0, 0), (1, 2), (3, 3)])]
    assert whole == ["class_definition"]
    assert split == ["class_definition", "identifier", "function_definition", "assignment"]


def test_a_function_the_chunker_never_reaches_is_reported_with_its_parent() -> None:
    source = b"while true; do\n  f() { echo hi; }\ndone\ng() { echo; }\n"
    found = audit_tree(_parse("bash", source), source, GRAMMARS["bash"], [(0, 2), (3, 3)])
    assert found.hidden == [("do_group", 1, "f")]


def test_rows_under_error_nodes_are_counted_without_blank_rows() -> None:
    # Braces balanced only across #if/#else branches: g's rows end up under an ERROR node.
    source = (
        b"int f(void) { return 1; }\n#if A\nint g(void) {\n#else\nint g(int x) {\n#endif\n\n"
        b"  return 2;\n}\n"
    )
    found = audit_tree(_parse("c", source), source, GRAMMARS["c"], [(0, 0), (1, 8)])
    assert not found.root_error
    assert found.error_rows == 7  # rows 2-9 less the blank one


def test_definition_like_names() -> None:
    assert all(map(is_definition_like, ["type_alias_declaration", "const_item", "type_spec"]))
    assert not any(map(is_definition_like, ["call_expression", "identifier", "comment"]))


def test_span_inside_one_chunk_or_split() -> None:
    spans = [(1, 10), (11, 20), (21, 30)]
    assert span_chunks(spans, 3, 8) == (True, 1)
    assert span_chunks(spans, 8, 25) == (False, 3)
    assert span_chunks(spans, 40, 41) == (False, 0)


def test_paths_match_as_the_benchmark_says() -> None:
    assert _same_path("detail/lexer.hpp", "include/nlohmann/detail/lexer.hpp")
    assert _same_path("a/b.py", "a/b.py")
    assert not _same_path("b.py", "ab.py")


def test_tally_shares_and_token_percentiles() -> None:
    tally = Tally()
    drafts = [
        ChunkDraft(start_line=i, end_line=i, content="x", symbol=s, kind=k, token_count=t)
        for i, (k, s, t) in enumerate(
            [
                ("function", "f", 10),
                ("function", None, 20),
                ("block", "f", 30),
                ("module", None, 40),
            ],
            start=1,
        )
    ]
    tally.add(drafts)
    summary = tally.summary()
    assert summary["kinds"] == {"function": 0.5, "block": 0.25, "module": 0.25}
    assert summary["definitions_without_symbol"] == 0.5
    assert (summary["tokens_median"], summary["tokens_p90"], summary["blocks"]) == (25, 30, 1)
