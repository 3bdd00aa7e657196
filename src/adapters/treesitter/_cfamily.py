"""C and C++: what their grammars cannot see before the preprocessor runs, and their names.

tree-sitter-c/-cpp parse the source as written, before the preprocessor runs, so two common
shapes wreck the tree around them:

- a line holding only a macro (``NLOHMANN_JSON_NAMESPACE_BEGIN``, ``Q_OBJECT``,
  ``JSON_HEDLEY_WARN_UNUSED_RESULT``, ``__BEGIN_DECLS``) is read as the type of what follows: a
  namespace becomes a "function" named ``namespace``, a class its return type;
- ``#if``/``#else`` branches that each open the same brace (``for (...) {`` in both) balance only
  when one branch is kept, and the function holding them ends up in an ERROR node.

Both are blanked in the parser's input only: every byte but the line breaks becomes a space, so
rows and byte columns are unchanged and the chunks keep the original text. A definition the
grammar still makes of a macro line (``API_BEGIN namespace x {`` on one line) has no function
declarator (``declares_function``), and an operator is named by its symbols too
(``operator_name``).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from tree_sitter import Node

# A line holding only an ALL-CAPS macro name (leading underscores allowed), with at most one
# argument list, or followed by a colon: a macro standing for an access specifier
# (``JSON_PRIVATE_UNLESS_TESTED:``, ``Q_SIGNALS:``), or a C label, which the statement after it
# does without. Lower-case names are left alone: they are functions, types and keywords.
_MACRO_LINE = re.compile(rb"^[ \t]*_*[A-Z][A-Z0-9_]+[ \t]*(\(.*\)|:(?!:))?[ \t]*$", re.MULTILINE)
# A line that starts a declarator (``name(`` or ``ns::name(``): the macro line above it is its
# return type (``BOOL\nWINAPI\nDllMain(...)``), which the grammar needs.
_DECLARATOR_START = re.compile(rb"[ \t]*[A-Za-z_~][\w:~]*[ \t]*\(")
# The ends of a line after which a new declaration starts (``>``: a template head).
_BOUNDARY_ENDS = (b";", b"{", b"}", b":", b">", b"*/")
_LINE_COMMENT = re.compile(rb"\s//.*$")
_COMMENT_STARTS = (b"//", b"/*", b"*")
_CONDITIONAL = re.compile(rb"[ \t]*#[ \t]*(\w+)")
_OPENS = frozenset((b"if", b"ifdef", b"ifndef"))
_BRANCHES = frozenset((b"else", b"elif", b"elifdef", b"elifndef"))

# Declarators that declare a function (``operator_cast``: ``operator bool() const``), and how
# deep below a definition's declarator one is looked for (pointers, references, parentheses).
_FUNCTION_DECLARATORS = frozenset(("function_declarator", "operator_cast"))
_DECLARATOR_DEPTH = 4
# An operator's name (``operator<``, ``operator()``, ``operator new[]``, ``operator bool``): the
# symbols after the keyword belong to it, up to its parameter list.
_OPERATOR = re.compile(r"\boperator\b\s*(\(\s*\)|[^(]*)")
_TEMPLATE_ARGUMENTS = re.compile(r"<[^<>]*>")


def blank_macro_lines(source: bytes) -> tuple[bytes, frozenset[int]]:
    """``source`` with the lines holding only a macro invocation blanked where it is safe, and
    their rows (they annotate the definition below them, as attributes do).

    A line is blanked when it holds only an ALL-CAPS name, optionally with one balanced argument
    list, and it stands between declarations: the code line above it ends one (``;``, ``{``,
    ``}``, ``:``, a template head's ``>``, a comment, a directive, another such line, or the file
    starts) and
    the code line below it neither opens a body (``TEST(Suite, Name)`` over ``{`` is a
    definition, which the grammar reads as a function named ``TEST``) nor, for a bare name,
    starts a declarator (``BOOL`` over ``DllMain(...)`` is the return type; a name with
    arguments is an attribute, as ``JSON_HEDLEY_NON_NULL(3)`` over a constructor). A line continuing a directive (``\\``) or an
    expression (an enumerator list, operands) is left alone.
    """
    if not _MACRO_LINE.search(source):
        return source, frozenset()
    lines = source.split(b"\n")
    blanked: set[int] = set()
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    for match in _MACRO_LINE.finditer(source):
        arguments = match.group(1)
        if arguments is not None and arguments != b":" and not _one_group(arguments):
            continue
        row = bisect_right(offsets, match.start()) - 1  # the line the match starts on
        if _starts_declaration(lines, row, blanked) and _ends_declaration(
            lines, row, has_arguments=arguments is not None
        ):
            blanked.add(row)
    if not blanked:
        return source, frozenset()
    out = b"\n".join(_blank(line) if i in blanked else line for i, line in enumerate(lines))
    return out, frozenset(blanked)


def first_branches(source: bytes) -> bytes:
    """``source`` as if each ``#if`` took its first branch: the conditional directives and the
    ``#elif``/``#else`` branches blanked.

    What ctags does: the first branch is the one written to stand alone, and braces that open
    in each branch and close once after ``#endif`` balance when one branch is read as plain
    code (the grammar wants each branch of a ``#if`` it keeps to be complete).
    """
    lines = source.split(b"\n")
    out: list[bytes] = []
    stack: list[bool] = []  # per open #if: whether its current branch is blanked
    continued: bool | None = None  # a directive's continuation lines share its fate
    for line in lines:
        if continued is not None:
            blank = continued
        else:
            match = _CONDITIONAL.match(line)
            word = match.group(1) if match else None
            if word in _OPENS:
                stack.append(False)
                blank = True
            elif word in _BRANCHES and stack:
                stack[-1] = True
                blank = True
            elif word == b"endif" and stack:
                stack.pop()
                blank = True
            else:
                blank = any(stack)
        is_directive = continued is not None or line.lstrip().startswith(b"#")
        continued = blank if is_directive and line.rstrip().endswith(b"\\") else None
        out.append(_blank(line) if blank else line)
    return b"\n".join(out)


def error_weight(root: Node) -> int:
    """How much of a tree failed to parse: the rows holding an ERROR or a missing node.

    A root that is itself an ERROR (what tree-sitter makes of a file with an unbalanced brace
    far down) is looked into: its named children are mostly parsed definitions, and its stray
    tokens (a ``{`` or ``for`` that fit nowhere) are the failure.
    """
    failed: set[int] = set()
    stack = [root]
    if root.is_error:
        stack = [child for child in root.children if child.is_named]
        failed.update(child.start_point.row for child in root.children if not child.is_named)
    while stack:
        node = stack.pop()
        if node.is_error:
            failed.update(range(node.start_point.row, node.end_point.row + 1))
        elif node.is_missing:
            failed.add(node.start_point.row)
        elif node.has_error:
            stack.extend(node.children)
    return len(failed)


def declares_function(node: Node) -> bool:
    """Whether a C/C++ definition's declarator chain holds a function declarator."""
    declarator = node.child_by_field_name("declarator")
    stack = [(declarator, 0)] if declarator is not None else []
    while stack:
        current, depth = stack.pop()
        if current.type in _FUNCTION_DECLARATORS:
            return True
        if depth < _DECLARATOR_DEPTH:
            stack.extend((child, depth + 1) for child in current.named_children)
    return False


def operator_name(name: str) -> str | None:
    """``Scope.operator<`` from ``Scope<T>::operator<``; None when ``name`` names no operator.

    The scope loses its template arguments and ``::`` becomes ``.``, as in other symbols.
    """
    operator = _OPERATOR.search(name)
    if operator is None:
        return None
    scope = name[: operator.start()]
    while _TEMPLATE_ARGUMENTS.search(scope):
        scope = _TEMPLATE_ARGUMENTS.sub("", scope)
    scope = scope.replace("::", ".").strip()
    symbols = operator.group(1).strip()
    if symbols[:1].isalpha() or symbols[:1] == "_":
        return f"{scope}operator {' '.join(symbols.split())}"  # new, delete, a conversion type
    return f"{scope}operator{''.join(symbols.split())}"


def _one_group(arguments: bytes) -> bool:
    """Whether ``(...)`` is one balanced parenthesised group (not ``(a) || (b)`` or ``(x))``)."""
    depth = 0
    for i, char in enumerate(arguments):
        if char == 0x28:  # (
            depth += 1
        elif char == 0x29:  # )
            depth -= 1
            if depth == 0:
                return i == len(arguments) - 1
    return False


def _starts_declaration(lines: list[bytes], row: int, blanked: set[int]) -> bool:
    """Whether the code line above ``row`` ends a declaration, statement or directive."""
    above = row - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0 or above in blanked:
        return True
    if lines[above].rstrip().endswith(b"\\"):
        return False  # ``row`` continues a directive
    raw = lines[above].strip()
    if raw.startswith(b"#") or (above > 0 and lines[above - 1].rstrip().endswith(b"\\")):
        return True  # a directive, or the last line of one
    if raw.startswith(_COMMENT_STARTS):
        return True
    return _LINE_COMMENT.sub(b"", raw).rstrip().endswith(_BOUNDARY_ENDS)


def _ends_declaration(lines: list[bytes], row: int, *, has_arguments: bool) -> bool:
    """Whether the code line below ``row`` neither opens its body nor starts its declarator."""
    below = _next_code_line(lines, row)
    if below is not None and lines[below].lstrip().startswith(b"{"):
        return False
    if has_arguments:
        return True
    # Bare names over a declarator are its specifiers (``BOOL`` over ``WINAPI`` over ``f(``).
    while below is not None and (bare := _MACRO_LINE.match(lines[below])) and not bare.group(1):
        below = _next_code_line(lines, below)
    if below is None or _MACRO_LINE.match(lines[below]):
        return True
    return not _DECLARATOR_START.match(lines[below])


def _next_code_line(lines: list[bytes], row: int) -> int | None:
    below = row + 1
    while below < len(lines) and not lines[below].strip():
        below += 1
    return below if below < len(lines) else None


def _blank(line: bytes) -> bytes:
    return b" " * len(line)
