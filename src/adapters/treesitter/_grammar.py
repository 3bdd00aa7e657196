"""Per-language tree-sitter node types: what is a function, a class, a container to look inside."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from codebase_mcp_search.adapters.treesitter._cfamily import declares_function, operator_name

FUNCTION = "function"
CLASS = "class"
TRANSPARENT = "transparent"


@dataclass(frozen=True, slots=True)
class Grammar:
    """Node types of one tree-sitter grammar, grouped by what the chunker does with them.

    ``transparent`` nodes (namespaces, preprocessor blocks, ERROR) are looked through: their
    definitions count as definitions of the enclosing level; ``conditionals`` (an ``if``, a
    ``&&`` list) are looked through only when they hold a definition. ``wrappers`` (decorators,
    export, template) take their kind and name from the definition they wrap but keep their own
    range. ``variables`` and ``fields`` are definitions only when their value is a function (or
    a call with a function literal among its arguments: ``memo((p) => ...)``), and so are
    ``assignments`` (``name = function ... end``: Lua). Where definitions are calls (Elixir's
    ``def name(args) do ... end``), a node of a ``calls`` type is a function when its callee is
    one of ``function_calls``, a container when one of ``class_calls``, named by its first
    argument. ``continuations`` belong to the definition right before them (Dart's
    ``function_body``), and consecutive ``clauses`` of one name are one definition (Haskell's
    equations); ``members`` are member lists besides ``BODY_TYPES``; ``read`` is a language's
    own reading, tried first. ``instances`` (Scala's ``val`` and ``given``) are containers when
    their value is an anonymous class (``new T { ... }``) or a ``with`` body (a typeclass
    instance, whose members are methods).
    """

    functions: frozenset[str]
    classes: frozenset[str]
    transparent: frozenset[str] = frozenset()
    conditionals: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    variables: frozenset[str] = frozenset()
    fields: frozenset[str] = frozenset()
    receiver_methods: frozenset[str] = frozenset()
    assignments: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    function_calls: frozenset[str] = frozenset()
    class_calls: frozenset[str] = frozenset()
    instances: frozenset[str] = frozenset()
    # Function definitions that are ones only when their declarator declares a function: C/C++'s
    # grammar reads ``MACRO namespace x {`` (a macro the parser cannot expand) as a function named
    # ``namespace`` with the namespace as its body; such a node is looked through instead.
    declared_functions: frozenset[str] = frozenset()
    # Function-like macros: functions (named by the macro) when their body spans lines, as one
    # that expands to statements or generates definitions does (``UV_LOOP_WATCHER_DEFINE``); a
    # one-line macro is an expression or a constant, code between definitions.
    macro_functions: frozenset[str] = frozenset()
    # The kind of a split container's own lines (its declaration, docs and fields): a class's
    # ``header``; the ``module`` code of a language whose containers are modules (Elixir).
    container_gaps: str = "header"
    continuations: frozenset[str] = frozenset()
    clauses: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()
    read: Callable[[Node], tuple[str, Node, str | None] | None] | None = None


def _words(names: str) -> frozenset[str]:
    return frozenset(names.split())


def _g(
    functions: str,
    classes: str = "",
    transparent: str = "",
    conditionals: str = "",
    wrappers: str = "",
    variables: str = "",
    fields: str = "",
    receiver_methods: str = "",
    assignments: str = "",
    calls: str = "",
    function_calls: str = "",
    class_calls: str = "",
    instances: str = "",
    container_gaps: str = "header",
    declared_functions: str = "",
    macro_functions: str = "",
) -> Grammar:
    return Grammar(
        functions=_words(functions),
        classes=_words(classes),
        transparent=_words(transparent) | {"ERROR"},
        conditionals=_words(conditionals),
        wrappers=_words(wrappers),
        variables=_words(variables),
        fields=_words(fields),
        receiver_methods=_words(receiver_methods),
        assignments=_words(assignments),
        calls=_words(calls),
        function_calls=_words(function_calls),
        class_calls=_words(class_calls),
        instances=_words(instances),
        container_gaps=container_gaps,
        declared_functions=_words(declared_functions),
        macro_functions=_words(macro_functions),
    )


# Node types whose rows, when they start a line, belong to the definition right below them.
PREFIX_TYPES = (
    "comment",
    "line_comment",
    "block_comment",
    "multiline_comment",
    "decorator",
    "attribute_item",
    "annotation",
)

# The PREFIX_TYPES that are comments (the others are decorators, attributes, annotations).
COMMENT_TYPES = frozenset(t for t in PREFIX_TYPES if "comment" in t)

# Per language, characters of which every node of a PREFIX_TYPES type holds at least one: a file
# with none of them has no such node, and the query for them is skipped. Only languages whose
# grammars make this plain are listed (Python: comments are ``#...``, decorators ``@...``; bash:
# comments are ``#...``); others are always queried.
PREFIX_MARKS: dict[str, bytes] = {"python": b"#@", "bash": b"#"}

# Member lists that a container's items are read from (besides its ``body`` field).
BODY_TYPES = _words(
    "class_body enum_class_body enum_body enum_body_declarations declaration_list "
    "field_declaration_list template_body body_statement interface_body protocol_body "
    "statement_block compound_statement block enum_member_declaration_list "
    "enum_declaration_list do_block with_template_body"
)

_FUNCTION_VALUES = _words(
    "arrow_function function_expression function generator_function function_definition"
)
# Calls whose arguments may hold the function a variable is bound to (JavaScript, TypeScript).
_CALL_VALUES = _words("call_expression")
_NAME_TYPES = _words(
    "identifier type_identifier simple_identifier constant name word field_identifier "
    "property_identifier namespace_identifier"
)
_DECLARATOR_LEAVES = _words(
    "identifier field_identifier qualified_identifier destructor_name operator_name "
    "operator_cast type_identifier primitive_type"
)
_INSTANCE_BODIES = _words("template_body with_template_body")
_BLOCKS = _words("block indented_block")
_CLASS_NEEDS_BODY = _words("struct_specifier union_specifier enum_specifier class_specifier")
# A one-line alias (``type Id = string | number``) names a type expression as a constant names
# a value: it stays in module code, where the ranking's ``type`` keyword rule still finds it.
_CLASS_NEEDS_ROWS = _words("type_alias_declaration")
_MAX_WRAPPING = 4
MAX_NAME_CHARS = 200


def rows(node: Node) -> tuple[int, int]:
    """First and last 0-based row of a node (an end at column 0 belongs to the row before)."""
    start, end = node.start_point, node.end_point
    last = end.row - 1 if end.column == 0 and end.row > start.row else end.row
    return start.row, last


def classify(node: Node, grammar: Grammar, depth: int = 0) -> tuple[str, Node, str | None] | None:
    """``(category, definition node, name)`` for a definition or container, else None."""
    if grammar.read is not None and (found := grammar.read(node)) is not None:
        return found
    kind = node.type
    if kind in grammar.wrappers and depth < _MAX_WRAPPING:
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("definition")
        candidates = [inner] if inner is not None else list(reversed(node.named_children))
        for candidate in candidates:
            found = classify(candidate, grammar, depth + 1)
            if found is not None:
                return found
        return None
    if kind in grammar.transparent:
        return TRANSPARENT, node, None
    if kind in grammar.conditionals:
        branches = node.named_children if depth < _MAX_WRAPPING else []
        held = any(classify(child, grammar, depth + 1) is not None for child in branches)
        return (TRANSPARENT, node, None) if held else None
    if kind in grammar.macro_functions:
        first, last = rows(node)
        return (FUNCTION, node, definition_name(node)) if last > first else None
    if kind in grammar.functions:
        if kind in grammar.declared_functions and not declares_function(node):
            return TRANSPARENT, node, None
        return FUNCTION, node, definition_name(node)
    if kind in grammar.classes:
        if kind in _CLASS_NEEDS_BODY and node.child_by_field_name("body") is None:
            return None
        if kind in _CLASS_NEEDS_ROWS and node.start_point.row == node.end_point.row:
            return None
        if kind == "type_definition":
            inner_type = node.child_by_field_name("type")
            if inner_type is None or inner_type.child_by_field_name("body") is None:
                return None
        return CLASS, node, definition_name(node)
    if kind in grammar.variables:
        declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        if declarator is not None and _is_function_value(declarator):
            return FUNCTION, node, _text(declarator.child_by_field_name("name"))
        return None
    if kind in grammar.fields and _is_function_value(node):
        name = node.child_by_field_name("property") or node.child_by_field_name("name")
        return FUNCTION, node, _text(name)
    if kind in grammar.assignments:
        return _assigned_function(node)
    if kind in grammar.calls:
        return _call_definition(node, grammar)
    if kind in grammar.instances and instance_body(node) is not None:
        name = node.child_by_field_name("name") or node.child_by_field_name("pattern")
        if name is None:  # an anonymous given: Scala names it after the type it implements
            name = node.child_by_field_name("return_type")
        return CLASS, node, _clean(_text(name))
    return None


def instance_body(node: Node) -> Node | None:
    """The member list of an instance definition: the body of the anonymous class that is its
    value (``val x: T = new T { ... }``, alone in a block or an indented block), or its ``with``
    body (``given x: T with ...``); None when the value is anything else."""
    value = node.child_by_field_name("value") or node.child_by_field_name("body")
    for _ in range(_MAX_WRAPPING):
        if value is None:
            return None
        if value.type in _INSTANCE_BODIES:
            return value
        if value.type == "instance_expression":
            return next((c for c in value.named_children if c.type in _INSTANCE_BODIES), None)
        if value.type not in _BLOCKS:
            return None
        code = [c for c in value.named_children if c.type not in COMMENT_TYPES]
        value = code[0] if len(code) == 1 else None
    return None


def _assigned_function(node: Node) -> tuple[str, Node, str | None] | None:
    """``name = function ... end``: targets are the first named child, values the last (Lua: lists
    of each; R: ``f <- function(x)``, one of each, and a formula's ``~`` is no assignment)."""
    operator = _text(node.child_by_field_name("operator"))
    if len(node.named_children) < 2 or operator not in (None, "=", "<-", "<<-", ":="):
        return None
    target, value = node.named_children[0], node.named_children[-1]
    if value.type not in _FUNCTION_VALUES and target.named_children and value.named_children:
        target, value = target.named_children[0], value.named_children[0]
    if value.type not in _FUNCTION_VALUES:
        return None
    return FUNCTION, node, _clean(_text(target))


def _call_definition(node: Node, grammar: Grammar) -> tuple[str, Node, str | None] | None:
    """A call that defines (``def name(args) when guard do``, ``defmodule Name do``), else None."""
    callee = _text(node.child_by_field_name("target"))
    if callee in grammar.function_calls:
        category = FUNCTION
    elif callee in grammar.class_calls:
        category = CLASS
    else:
        return None
    arguments = next((c for c in node.named_children if c.type == "arguments"), None)
    first = arguments.named_children[0] if arguments and arguments.named_children else None
    return category, node, _clean(_called_name(first))


def _called_name(node: Node | None) -> str | None:
    """The name in a definition's head: ``name(args)``, ``name``, ``Alias``, ``head when guard``."""
    for _ in range(_MAX_WRAPPING):
        if node is None:
            return None
        if node.type in ("identifier", "alias"):
            return _text(node)
        if node.type == "call":
            target = node.child_by_field_name("target")
            return _text(target) if target is not None and target.type == "identifier" else None
        if node.type != "binary_operator":
            return None
        operator = _text(node.child_by_field_name("operator"))
        if operator != "when":
            return operator  # an operator defined by name: ``def left <> right``
        node = node.child_by_field_name("left")
    return None


def receiver_type(node: Node) -> str | None:
    """The receiver type name of a Go method (``func (s *Server) Start()`` gives ``Server``)."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    for param in receiver.named_children:
        type_node = param.child_by_field_name("type")
        if type_node is not None:
            return _clean(_text(type_node))
    return None


def definition_name(node: Node) -> str | None:
    """The declared name of a definition node, cleaned to a short identifier."""
    name = node.child_by_field_name("name")
    if name is None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type not in _DECLARATOR_LEAVES:
            nested = declarator.child_by_field_name("declarator")
            if nested is None:
                break
            declarator = nested
        name = declarator
    if name is None and node.type == "impl_item":
        name = node.child_by_field_name("type")
    if name is None and node.type == "type_declaration":
        spec = node.named_children[0] if node.named_children else None
        name = spec.child_by_field_name("name") if spec is not None else None
    if name is None:
        name = next((c for c in node.named_children if c.type in _NAME_TYPES), None)
    return _clean(_text(name))


def _is_function_value(node: Node) -> bool:
    value = node.child_by_field_name("value")
    return value is not None and _defines_function(value, 0)


def _defines_function(value: Node, depth: int) -> bool:
    """A function literal, or a call given one (maybe in a nested call), which makes a function
    of it: ``$constructor("Name", (inst, def) => {...})``, ``memo(forwardRef(...))``. A call
    given only data (``router({...})``, a tagged template) is not."""
    if value.type in _FUNCTION_VALUES:
        return True
    if value.type not in _CALL_VALUES or depth >= _MAX_WRAPPING:
        return False
    arguments = value.child_by_field_name("arguments")
    return arguments is not None and any(
        _defines_function(argument, depth + 1) for argument in arguments.named_children
    )


def _text(node: Node | None) -> str | None:
    if node is None or node.text is None:
        return None
    return node.text.decode("utf-8", "replace")


def _clean(name: str | None) -> str | None:
    if name is None:
        return None
    first = name.strip().split("\n", 1)[0].lstrip("*&").strip()
    operator = operator_name(first)
    if operator is not None:
        return operator[:MAX_NAME_CHARS]
    for stop in ("<", "[", "("):
        if stop in first[1:]:
            first = first[: first.index(stop, 1)]
    first = first.replace("::", ".").strip()
    return first[:MAX_NAME_CHARS] or None
