"""Chunks that carry no behaviour: they declare or gather code but do none of its work.

A developer asking "where are redirects followed" wants the function that follows them, not
``class TooManyRedirects(RequestException): pass``, the header of the class holding it, or the
import block at the top of its module; those share the question's words (often more densely
than the function, being short) and used to outrank it. A chunk is *hollow* when it is:

- a one-line or marker type: a class, struct, interface or enum chunk with at most
  ``MARKER_LINES`` lines of code once docstrings, comments, decorators and lone braces or
  ``pass`` are set aside (an exception type, a marker interface, an empty subclass);
- a bare type header: the chunker's ``header`` chunk (a class's declaration line with its
  docstring and fields, before its methods);
- an import block or re-export file: a ``module`` chunk whose lines only import, re-export or
  comment (``paths.is_reexports``).

The ranking multiplies a hollow chunk by ``hollow_prior`` unless the query names it (its
symbol's last part is a word of the query), so asking for ``TooManyRedirects`` still finds it.
"""

from __future__ import annotations

import functools
import re

from codebase_mcp_search.core.models import Chunk
from codebase_mcp_search.core.ranking.paths import is_reexports, normalise_name

# Code lines a marker type may have, its declaration included.
MARKER_LINES = 2
_TYPE_KINDS = frozenset({"class", "struct", "interface", "enum", "trait", "type"})
# The chunk kinds that may be hollow: the rest (functions, methods, blocks) never are.
HOLLOW_KINDS = _TYPE_KINDS | {"header", "module"}
_DOCSTRING = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|/\*[\s\S]*?\*/')
# Lines that hold no work: blank, comments, decorators and annotations, lone closers,
# ``pass`` and ``...``.
_EMPTY_LINE = re.compile(r"^\s*(#|//|--|\*|@|pass\b|\.\.\.|[{}();,\]\[]*\s*$|end\s*$)")


@functools.lru_cache(maxsize=8_192)
def code_lines(content: str) -> int:
    """The lines of ``content`` that hold code: not blank, not a comment or docstring, not a
    decorator, a lone brace or ``pass``."""
    stripped = _DOCSTRING.sub("", content)
    return sum(1 for line in stripped.splitlines() if not _EMPTY_LINE.match(line))


def is_hollow(chunk: Chunk) -> bool:
    """Whether ``chunk`` carries no behaviour (see the module docstring)."""
    kind = chunk.kind
    if kind == "header":
        return True
    if kind in _TYPE_KINDS:
        return code_lines(chunk.content) <= MARKER_LINES
    if kind == "module":
        return _reexports(chunk.content)
    return False


@functools.lru_cache(maxsize=8_192)
def _reexports(content: str) -> bool:
    return is_reexports(content)


def named_by(chunk: Chunk, words: frozenset[str]) -> bool:
    """Whether the chunk's symbol (its last part, normalised as ``paths.normalise_name``) is
    one of ``words`` (the query's, normalised alike)."""
    if not chunk.symbol:
        return False
    last = re.split(r"::|\.|->|#|\\", chunk.symbol)[-1]
    return normalise_name(last) in words
