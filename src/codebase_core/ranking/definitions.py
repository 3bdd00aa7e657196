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
from collections.abc import Mapping

from codebase_mcp_search.core.models import Chunk, last_name, symbol_names, symbol_parts
from codebase_mcp_search.core.ranking import paths
from codebase_mcp_search.core.ranking.config import RankingConfig
from codebase_mcp_search.core.ranking.query import QueryProfile

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
# Chunk kinds that hold a type's or module's own definition (``header``: a split class's own
# lines; ``module``: a split Elixir module's, the only module chunks with a symbol).
_TYPE_KINDS = frozenset({"class", "header", "module"})
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


def definition_gain(
    chunk: Chunk, profile: QueryProfile, config: RankingConfig
) -> tuple[float, bool]:
    """What defining one of the queried names adds to ``chunk`` (0 when it defines none)
    before ``member_factor``, and whether it defines the name only as a member."""
    if not profile.names or config.definition_boost <= 0:
        return 0.0, False
    scale = 1.0 if profile.is_symbol else config.embedded_factor
    if scale <= 0:
        # Names inside a sentence with embedded_factor 0 (the default): nothing gains, so
        # no chunk needs reading for a definition.
        return 0.0, False
    for name in profile.names:
        if defines(chunk, name):
            named_after = paths.normalise_name(last_name(name)) in paths.stem_names(chunk.file_path)
            gain = config.definition_boost * scale * (config.stem_factor if named_after else 1.0)
            return gain, is_member_definition(chunk, name)
    return 0.0, False


def is_member_definition(chunk: Chunk, name: str) -> bool:
    """Whether ``chunk`` defines the bare ``name`` only as a member of something (its symbol
    says ``Owner.name``, ``Owner::name``...), not as a name of its own. A type is the thing
    itself wherever it is defined: a class (or its header) named ``Outer.Inner``, or an Elixir
    module named ``Phoenix.Router``, is not a member."""
    if chunk.kind in _TYPE_KINDS:
        return False
    own = [p for p in symbol_parts(chunk.symbol) if last_name(p) == name]
    return bool(own) and all(p != name for p in own)


def definition_gains(
    chunks: Mapping[str, Chunk], profile: QueryProfile, config: RankingConfig
) -> dict[str, float]:
    """``definition_gain`` of each chunk (by id) that defines a queried name. When the query
    is a bare name and some chunk defines it as a name of its own (``type Engine struct``),
    the chunks defining it only as a member of something else (``defaultValidator.Engine``)
    gain ``member_factor`` of theirs: a bare name asks for the thing itself first. When every
    definition is a member (a method name), they all gain in full."""
    found = {cid: definition_gain(c, profile, config) for cid, c in chunks.items()}
    found = {cid: gm for cid, gm in found.items() if gm[0] > 0}
    qualified = any(last_name(n) != n for n in profile.names)
    demote = not qualified and any(not member for _, member in found.values())
    return {
        cid: gain * (config.member_factor if demote and member else 1.0)
        for cid, (gain, member) in found.items()
    }
