"""Query understanding: is the query a name to look up, or a question in words?

A *symbol* query is one identifier-like token, possibly qualified (``HTTPAdapter``,
``field_validator``, ``Sinatra::Base``, ``a.b``, ``uv_loop_init()``): the user wants the
place that defines it. Anything else is *natural language*; identifiers written inside it
(``how does JsonReader handle lenient mode``) are found too, since they name code the answer
is likely to define. A plain lowercase word (``router``) reads as natural language: it is as
likely a topic as a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import last_name

# One identifier, or several joined by a qualifier (:: . -> \ #), with optional call parens.
_QUALIFIED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|\.|->|\\|#)[A-Za-z_$][\w$]*)*[!?]?(?:\(\))?")
# Shapes that only a name has: an inner capital or underscore (camelCase, snake_case,
# HTTPServer), a leading underscore, or a qualifier.
_NAME_SHAPE = re.compile(r"^_|[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]|::|->|\\|#|\w\.\w")
# A capitalised word alone (``Observable``) is a type name when the query is that word only.
_CAPITALISED = re.compile(r"^[A-Z][A-Za-z0-9]*$")

# Words that ask for a kind of file that the priors otherwise rank below the source.
TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "unittest", "pytest"})
DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog"})
EXAMPLE_WORDS = frozenset({"example", "examples", "sample", "samples", "demo", "demos"})
COMPAT_WORDS = frozenset({"compat", "compatibility", "legacy", "deprecated", "polyfill"})
GENERATED_WORDS = frozenset({"generated", "vendor", "vendored", "amalgamated"})


class QueryKind(StrEnum):
    SYMBOL = "symbol"
    NATURAL = "natural"


@dataclass(frozen=True, slots=True)
class QueryProfile:
    """What a query asks for, as the ranking needs it."""

    kind: QueryKind
    names: tuple[str, ...]
    """Names to find the definitions of (the last part of a qualified name; for a qualified
    query the whole qualified text too), as written."""
    terms: tuple[str, ...]
    """The query's lexical terms (``lexical.query_terms``)."""
    words: frozenset[str]
    """The query's lower-cased words as typed, for the priors' exemptions."""
    tokens: tuple[str, ...] = ()
    """The query's whitespace-separated words, stripped of punctuation around them."""

    @property
    def is_symbol(self) -> bool:
        return self.kind is QueryKind.SYMBOL

    def asks_for(self, words: frozenset[str]) -> bool:
        """Whether the query mentions one of ``words`` (say, tests or docs)."""
        return not self.words.isdisjoint(words)


def _is_name(token: str, alone: bool) -> bool:
    if not _QUALIFIED.fullmatch(token):
        return False
    return bool(_NAME_SHAPE.search(token)) or (alone and bool(_CAPITALISED.match(token)))


def analyse_query(text: str) -> QueryProfile:
    """Classify ``text`` and pick out the names it holds."""
    stripped = text.strip()
    tokens = stripped.split()
    words = frozenset(re.findall(r"[a-z0-9]+", stripped.lower()))
    terms = tuple(lexical.query_terms(stripped))
    bare_tokens = tuple(b for b in (t.strip("`'\",;:()[]{}<>?!.") for t in tokens) if b)
    if len(tokens) == 1 and _is_name(tokens[0], alone=True):
        whole = tokens[0].removesuffix("()")
        part = last_name(whole)
        names = (part,) if part == whole else (part, whole)
        return QueryProfile(QueryKind.SYMBOL, names, terms, words, bare_tokens)
    found: list[str] = []
    for token in tokens:
        bare = token.strip("`'\",;:()[]{}<>?!")
        if bare and _is_name(bare, alone=False):
            part = last_name(bare)
            if len(part) > 2 and part not in found:
                found.append(part)
    return QueryProfile(QueryKind.NATURAL, tuple(found), terms, words, bare_tokens)
