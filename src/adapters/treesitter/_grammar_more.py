"""Grammar entries of Dart, R, Haskell, OCaml, Zig and Erlang (see ``_grammar`` for the fields).

Their trees say less by node type alone than the languages in ``_grammar``: a Zig ``Decl`` is a
function, a type or a constant by what it holds; an OCaml ``let`` is a function only with
parameters; an R function is an assignment. Each such language has a ``read`` function here that
names its definitions the way its users write them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from codebase_mcp_search.adapters.treesitter._grammar import (
    CLASS,
    FUNCTION,
    MAX_NAME_CHARS,
    TRANSPARENT,
    Grammar,
    _g,
    _words,
)

Found = tuple[str, Node, str | None]

# R: calls that create a class (assigned to its name, or named by their first argument) and calls
# that define a function named by their first argument (S4 generics and methods).
_R_CLASS_CALLS = frozenset({"R6Class", "R6::R6Class", "setRefClass", "setClass"})
_R_FUNCTION_CALLS = frozenset({"setGeneric", "setMethod", "setValidity"})
_R_ASSIGNMENTS = frozenset({"<-", "=", "<<-"})
_DART_CONSTRUCTORS = frozenset(
    {
        "constructor_signature",
        "factory_constructor_signature",
        "constant_constructor_signature",
        "redirecting_factory_constructor_signature",
    }
)
_OCAML_FUNCTIONS = frozenset({"fun_expression", "function_expression"})


def _text(node: Node | None) -> str | None:
    """A node's text as a name: its first line, bounded (operators kept whole: ``<<``, ``>>=``)."""
    if node is None or node.text is None:
        return None
    text = node.text.decode("utf-8", "replace").strip().split("\n", 1)[0]
    return text[:MAX_NAME_CHARS].strip() or None


def _child(node: Node, *types: str) -> Node | None:
    return next((c for c in node.named_children if c.type in types), None)


def _unquoted(node: Node | None) -> str | None:
    text = _text(node)
    return (text.strip("\"'`") or None) if text is not None else None


def _dart(node: Node) -> Found | None:
    """Constructors (``Point.origin(...)`` is ``origin``) and operators, which have no name field."""
    if node.type in _DART_CONSTRUCTORS:
        names = [c for c in node.named_children if c.type == "identifier"]
        return (FUNCTION, node, _text(names[-1])) if names else None
    if node.type == "operator_signature":
        operator = next((c for c in node.named_children if "operator" in c.type), None)
        return FUNCTION, node, f"operator {_text(operator) or ''}".strip()
    return None


def _r(node: Node) -> Found | None:
    """Classes made by ``R6Class``/``setRefClass``/``setClass``, and their member functions."""
    if node.type == "binary_operator":
        operator = _text(node.child_by_field_name("operator"))
        lhs, rhs = node.child_by_field_name("lhs"), node.child_by_field_name("rhs")
        if operator in _R_ASSIGNMENTS and rhs is not None and _r_callee(rhs) in _R_CLASS_CALLS:
            return CLASS, rhs, _unquoted(lhs)
        return None
    if node.type == "call":
        callee = _r_callee(node)
        if callee not in _R_CLASS_CALLS and callee not in _R_FUNCTION_CALLS:
            return None
        arguments = node.child_by_field_name("arguments")
        first = _child(arguments, "argument") if arguments is not None else None
        value = first.child_by_field_name("value") if first is not None else None
        if value is None or value.type != "string":
            return None
        return (CLASS if callee in _R_CLASS_CALLS else FUNCTION), node, _unquoted(value)
    if node.type == "argument":
        # Inside a class call: ``public = list(...)`` holds members, ``f = function(...)`` is one.
        value = node.child_by_field_name("value")
        if value is not None and value.type == "function_definition":
            return FUNCTION, node, _unquoted(node.child_by_field_name("name"))
        if value is not None and _r_callee(value) == "list":
            return TRANSPARENT, node, None
    return None


def _r_callee(node: Node) -> str | None:
    return _text(node.child_by_field_name("function")) if node.type == "call" else None


def _haskell(node: Node) -> Found | None:
    """Equations and bindings, named by their variable or operator (``a <+> b = ...``); instances
    by their type, as Rust's ``impl Trait for Type`` is (``instance Show (Tree a)`` is ``Tree``).
    """
    if node.type == "instance":
        return CLASS, node, _instance_type(node) or _text(node.child_by_field_name("name"))
    if node.type not in ("function", "bind"):
        return None
    name = node.child_by_field_name("name")
    if name is None:
        infix = _child(node, "infix")
        name = infix.child_by_field_name("operator") if infix is not None else None
    text = _text(name)
    if text is None:
        return None  # a pattern binding: ``(x, y) = ...`` is module code
    return FUNCTION, node, text.removeprefix("(").removesuffix(")") or text


def _instance_type(instance: Node) -> str | None:
    """The first type constructor an instance is for (none for ``[a]``, ``a -> b``, ``s``)."""
    patterns = instance.child_by_field_name("patterns")
    for pattern in patterns.named_children if patterns is not None else ():
        head: Node | None = pattern
        while head is not None and head.type in ("parens", "apply"):
            head = head.child_by_field_name("type" if head.type == "parens" else "constructor")
        if head is not None and head.type in ("name", "qualified"):
            text = _text(head)
            return text.rsplit(".", 1)[-1] if text else None
    return None


def _ocaml(node: Node) -> Found | None:
    """Functions (a ``let`` with parameters or a ``fun``; in an interface, a ``val``), types,
    modules, classes."""
    kind = node.type
    if kind == "value_definition":
        binding = _child(node, "let_binding")
        if binding is None:
            return None
        body = binding.child_by_field_name("body")
        is_function = _child(binding, "parameter") is not None or (
            body is not None and body.type in _OCAML_FUNCTIONS
        )
        value_name = _ocaml_name(binding.child_by_field_name("pattern"))
        return (FUNCTION, node, value_name) if is_function and value_name else None
    if kind == "type_definition":
        binding = _child(node, "type_binding")
        name = binding.child_by_field_name("name") if binding is not None else None
        return (CLASS, node, _text(name)) if name is not None else None
    if kind == "exception_definition":
        constructor = _child(node, "constructor_declaration")
        name = _child(constructor, "constructor_name") if constructor is not None else None
        return (CLASS, node, _text(name)) if name is not None else None
    if kind in ("module_definition", "class_definition", "class_type_definition"):
        # The binding holds the name and the body (``struct ... end``, ``object ... end``).
        binding = _child(node, "module_binding", "class_binding", "class_type_binding")
        names = ("module_name", "class_name", "class_type_name")
        name = _child(binding, *names) if binding is not None else None
        return (CLASS, binding, _text(name)) if binding is not None and name is not None else None
    named = {
        "module_type_definition": "module_type_name",
        "method_definition": "method_name",
        "external": "value_name",
        "value_specification": "value_name",
    }.get(kind)
    name = _child(node, named) if named is not None else None
    if name is None:
        return None
    return (CLASS if kind == "module_type_definition" else FUNCTION), node, _text(name)


def _ocaml_name(pattern: Node | None) -> str | None:
    if pattern is None or pattern.type not in ("value_name", "parenthesized_operator"):
        return None  # ``let () = ...``, ``let (a, b) = ...``: module code
    text = _text(pattern)
    return text.removeprefix("(").removesuffix(")").strip() or text if text else None


def _zig(node: Node) -> Found | None:
    """``fn`` declarations, ``const T = struct/enum/union {...}`` containers and tests."""
    if node.type == "TestDecl":
        name = _child(node, "STRINGLITERALSINGLE", "IDENTIFIER")
        return FUNCTION, node, _unquoted(name)
    if node.type != "Decl":
        return None
    proto = _child(node, "FnProto")
    if proto is not None:
        return FUNCTION, node, _text(proto.child_by_field_name("function"))
    variable = _child(node, "VarDecl")
    if variable is None:
        return None
    value: Node | None = variable
    for wrapper in ("ErrorUnionExpr", "SuffixExpr", "ContainerDecl"):
        value = _child(value, wrapper) if value is not None else None
    if value is None:
        return None  # a constant or an import: module code
    return CLASS, value, _text(variable.child_by_field_name("variable_type_function"))


def _erlang(node: Node) -> Found | None:
    """A function clause, named by its atom (the clauses of one function are siblings)."""
    if node.type != "fun_decl":
        return None
    clause = _child(node, "function_clause")
    name = clause.child_by_field_name("name") if clause is not None else None
    return (FUNCTION, node, _text(name)) if name is not None else None


def _more(
    grammar: Grammar,
    continuations: str = "",
    clauses: str = "",
    members: str = "",
    read: Callable[[Node], Found | None] | None = None,
) -> Grammar:
    """``grammar`` with the fields only these languages use (``_g`` takes the others)."""
    return replace(
        grammar,
        continuations=_words(continuations),
        clauses=_words(clauses),
        members=_words(members),
        read=read,
    )


GRAMMARS: dict[str, Grammar] = {
    # A Dart function is two siblings: its signature, then its ``function_body``.
    "dart": _more(
        _g(
            "function_signature getter_signature setter_signature",
            "class_definition enum_declaration mixin_declaration extension_declaration"
            " extension_type_declaration",
            wrappers="method_signature declaration",
        ),
        continuations="function_body",
        read=_dart,
    ),
    "r": _more(_g("", assignments="binary_operator"), members="arguments call", read=_r),
    # Several equations of one function are several ``function`` nodes.
    "haskell": _more(
        _g(
            "",
            "data_type newtype type_synomym type_family data_family class",
            transparent="imports declarations",
        ),
        clauses="function",
        members="class_declarations instance_declarations",
        read=_haskell,
    ),
    # A module (``struct ... end``) is a namespace of functions: its own lines are module code.
    "ocaml": _more(_g("", container_gaps="module"), read=_ocaml),
    # An ``.mli``: the same definitions as their declarations (``val f : t``).
    "ocaml_interface": _more(_g("", container_gaps="module"), read=_ocaml),
    "zig": _more(_g(""), read=_zig),
    # Each clause of a function (``f(0) -> ...; f(N) -> ...``) is a ``fun_decl`` of its own.
    "erlang": _more(_g("", "record_decl type_alias opaque"), clauses="fun_decl", read=_erlang),
}

# Prefix rows besides comments (see ``_grammar_table.PREFIX_PATTERNS``): doc comments of their own node
# type, and what documents the definition below it (a Haskell type signature or pragma, an
# Erlang ``-spec``, which OTP's code writes a blank line above its function).
PREFIX_PATTERNS: dict[str, str] = {
    "dart": "(documentation_comment)",
    "haskell": "(haddock) (signature) (pragma)",
    "zig": "(doc_comment)",
    "erlang": "(spec) @spaced",
}
