"""Grammar entries of the first languages (see ``_grammar`` for the fields; ``_grammar_more``
holds Dart, R, Haskell, OCaml, Zig and Erlang)."""

from __future__ import annotations

from codebase_mcp_search.adapters.treesitter._grammar import Grammar, _g

_JS = _g(
    "function_declaration generator_function_declaration method_definition",
    "class_declaration",
    wrappers="export_statement",
    variables="lexical_declaration variable_declaration",
    fields="field_definition",
)
_TS = _g(
    "function_declaration generator_function_declaration method_definition function_signature"
    " method_signature abstract_method_signature",
    # Type aliases over several lines (object, conditional, mapped types) define types too.
    "class_declaration abstract_class_declaration interface_declaration enum_declaration"
    " type_alias_declaration",
    transparent="internal_module module",
    wrappers="export_statement ambient_declaration expression_statement",
    variables="lexical_declaration variable_declaration",
    fields="public_field_definition field_definition",
)
_PREPROC = (
    "preproc_if preproc_ifdef preproc_else preproc_elif preproc_elifdef linkage_specification"
)
_C = _g(
    "function_definition",
    "struct_specifier union_specifier enum_specifier type_definition",
    transparent=_PREPROC,
    declared_functions="function_definition",
    macro_functions="preproc_function_def",
)
# A friend function defined in its class (``friend bool operator==(...) { ... }``) is wrapped.
_CPP = _g(
    "function_definition",
    "class_specifier struct_specifier union_specifier enum_specifier type_definition",
    transparent=_PREPROC + " namespace_definition",
    wrappers="template_declaration friend_declaration",
    declared_functions="function_definition",
    macro_functions="preproc_function_def",
)

GRAMMARS: dict[str, Grammar] = {
    "python": _g("function_definition", "class_definition", wrappers="decorated_definition"),
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": _g(
        "function_declaration method_declaration",
        "type_declaration",
        receiver_methods="method_declaration",
    ),
    "rust": _g(
        "function_item function_signature_item macro_definition",
        "struct_item enum_item union_item trait_item impl_item",
        transparent="mod_item foreign_mod_item",
    ),
    "java": _g(
        "method_declaration constructor_declaration compact_constructor_declaration",
        "class_declaration interface_declaration enum_declaration record_declaration"
        " annotation_type_declaration",
    ),
    "c": _C,
    "cpp": _CPP,
    "csharp": _g(
        "method_declaration constructor_declaration destructor_declaration operator_declaration"
        " conversion_operator_declaration local_function_statement",
        "class_declaration struct_declaration interface_declaration enum_declaration"
        " record_declaration record_struct_declaration",
        transparent="namespace_declaration " + _PREPROC,
    ),
    "ruby": _g("method singleton_method", "class module singleton_class"),
    "php": _g(
        "function_definition method_declaration",
        "class_declaration interface_declaration trait_declaration enum_declaration",
        transparent="namespace_definition",
    ),
    "kotlin": _g(
        "function_declaration secondary_constructor",
        "class_declaration object_declaration companion_object",
    ),
    "swift": _g(
        "function_declaration init_declaration deinit_declaration protocol_function_declaration"
        " subscript_declaration",
        "class_declaration protocol_declaration",
    ),
    "scala": _g(
        "function_definition function_declaration",
        "class_definition object_definition trait_definition enum_definition package_object",
        transparent="package_clause",
        instances="val_definition given_definition",
    ),
    # A function defined only when a condition holds (in an ``if``, after ``&&``) is a function.
    "bash": _g("function_definition", conditionals="if_statement elif_clause else_clause list"),
    # Elixir defines with macros: ``def``/``defp``/... are calls whose first argument is the name.
    "elixir": _g(
        "",
        calls="call",
        function_calls="def defp defmacro defmacrop defguard defguardp defdelegate defn defnp",
        class_calls="defmodule defprotocol defimpl",
        # A module is a namespace of functions, documented by its @moduledoc: what lies
        # between its functions is module code, as a Python file's is, not a class header.
        container_gaps="module",
    ),
    "lua": _g(
        "function_declaration",
        wrappers="variable_declaration",
        assignments="assignment_statement",
        fields="field",
    ),
}

# Per language, query patterns (captured as ``@p``) for prefix rows that are not of a
# PREFIX_TYPES type: Elixir's function documentation and type attributes (``@doc``, ``@spec``,
# ``@impl``) stand above the ``def`` they describe; ``@moduledoc`` and ``@type`` do not.
PREFIX_PATTERNS: dict[str, str] = {
    "elixir": '(unary_operator operator: "@" operand: (call target: (identifier) @_attribute'
    ' (#any-of? @_attribute "doc" "spec" "impl" "deprecated")))',
}
