"""Does a chunk define a name, or only use it?

Two signs, either enough: the chunker recorded the name as the chunk's symbol (the last part
of ``Class.method``; a merged chunk lists several, joined by ``", "``), or the text holds a
definition keyword of some language right before the name (``class JsonReader``,
``def field_validator``, ``func (e *Engine) Use``, ``defmodule Phoenix.Router``,
``local function setup``). One keyword list serves every language: the keywords rarely mean
anything else before a name.
"""

from __future__ import annotations

import re

from codebase_core.models import Chunk, last_name, symbol_names

_KEYWORDS = (
    "class|struct|interface|trait|enum|union|record|protocol|extension|object|module|"
    "namespace|package|type|typealias|typedef|impl|def|defp|defmodule|defprotocol|defmacro|"
    "defstruct|defimpl|fn|fun|func|function|sub|macro_rules!|val|var|let|const|alias|"
    "abstract class|data class|case class|sealed class|sealed trait|enum class|local function"
)


# What a line holds before a defined name: a keyword, then a Go receiver, a generic parameter
# list, a namespace or owner prefix (``func (e *Engine) ``, ``defmodule Phoenix.``).
_BEFORE = re.compile(
    rf"(?:^|[\s(])(?:{_KEYWORDS})\s+"
    r"(?:\([^)\n]*\)\s*)?(?:<[^>\n]*>\s*)?(?:[A-Za-z_$][\w$]*(?:\.|::|:))*$",
    re.MULTILINE,
)
# What may follow a defined name.
_AFTER = frozenset(" \t\r\n<({:[;=,.!?")


def _defined_in(content: str, name: str) -> bool:
    """Whether some occurrence of ``name`` in ``content`` follows a definition keyword."""
    at = content.find(name)
    while at >= 0:
        end = at + len(name)
        if end == len(content) or content[end] in _AFTER:
            line_start = content.rfind("\n", 0, at) + 1
            if _BEFORE.search(content, line_start, at):
                return True
        at = content.find(name, at + 1)
    return False


def defines(chunk: Chunk, name: str) -> bool:
    """Whether ``chunk`` defines ``name`` (case-sensitive: ``Reader`` is not ``reader``)."""
    bare = last_name(name)
    if bare in symbol_names(chunk.symbol):
        return True
    return bool(bare) and _defined_in(chunk.content, bare)
