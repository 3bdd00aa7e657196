"""Other forms of a query's words, for lexical search (issue 36).

The index keeps each word as the analyser writes it (``core.lexical``: split identifiers, a
light plural stemmer), so a question about "parsing" misses a function named ``parse`` and a
``Parser`` class. A search in lexical mode asks for each query term's *stem group* as well: the
index terms sharing its Snowball English stem (``stem``), scored together as one term at a
weight below the term's own (``models.StemGroup``; the stores merge the group's postings).

The group is found without a vocabulary: ``variants`` writes the forms English inflection
and derivation make of the stem (``parse``, ``parser``, ``parsing``, ``parsed``), keeps those
whose stem is the same, and asks the store for all of them; the forms no chunk holds add
nothing. So the index, its writes and its schema stay as they are, and an index written by any
version answers with stems at once. The terms are the analyser's (light-stemmed, lower case):
what a store holds.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final

import snowballstemmer

from codebase_mcp_search.core import lexical

# Suffixes of English inflection and derivation that Snowball's English stemmer removes (or
# reduces to one it removes), each written onto a stem to give a form it may have come from.
_SUFFIXES: Final = (
    "",
    "s",
    "es",
    "e",
    "er",
    "ers",
    "ion",
    "ions",
    "ing",
    "ings",
    "ed",
    "ation",
    "ations",
    "al",
    "ent",
    "able",
    "ic",
    "ment",
    "ments",
    "ement",
    "ity",
    "ities",
    "ance",
    "ize",
    "izes",
    "ly",
    "ence",
    "ences",
    "ive",
    "ant",
    "ization",
    "ness",
    "ized",
    "y",
    "ies",
    "ical",
    "izer",
    "ible",
    "ous",
    "ability",
    "ally",
    "ically",
    "izing",
    "ively",
    "ful",
    "ism",
    "ational",
    "or",
    "ors",
    "ise",
    "ised",
    "ising",
    "isation",
    "ied",
    "ier",
    "ist",
    "ate",
    "ates",
    "ated",
    "ating",
    "ator",
    "ators",
    "ative",
    "atively",
    "ality",
    "ition",
    "ication",
    "icity",
    "ility",
    "ional",
    "ionally",
    "ioned",
    "ered",
    "ering",
    "ely",
    "eness",
    "fully",
    "ently",
)
# A group's forms, at most: a stem a few letters long (say "at") could match many words.
MAX_VARIANTS: Final = 64
# Stems shorter than this have no group: "us" or "id" would gather unrelated words.
MIN_STEM: Final = 3

_STEMMER = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=8192)
def stem(term: str) -> str:
    """The Snowball English stem of an alphabetic ``term``; any other term is its own."""
    if not term.isalpha():
        return term
    found: str = _STEMMER.stemWord(term)
    return found


def _bases(root: str) -> tuple[str, ...]:
    """What a stem's forms are written onto: the stem; without its final ``e`` (``name`` ->
    ``named``, ``use`` -> ``using``); with its final ``i`` as ``y`` (Snowball writes ``happy``
    as ``happi``); with its last consonant doubled after one vowel (``run`` -> ``running``)."""
    bases = [root]
    if root.endswith("e"):
        bases.append(root[:-1])
    if root.endswith("i"):
        bases.append(root[:-1] + "y")
    if root[-1] not in "aeiouwxy" and root[-2] in "aeiou" and root[-3:-2] not in tuple("aeiou"):
        bases.append(root + root[-1])
    return tuple(bases)


@functools.lru_cache(maxsize=4096)
def variants(term: str, cap: int = MAX_VARIANTS) -> tuple[str, ...]:
    """The index terms that may share ``term``'s stem, ``term`` first, then in order (the
    suffixes' order: the forms code uses most first): the forms written from the stem that
    the analyser would store as such a term and whose stem is the same, at most ``cap`` in
    all. A term that is not alphabetic, or whose stem is under ``MIN_STEM`` letters, is its
    group alone (it still counts as a group: every query term is asked for at the same weight
    twice, as its own term and in its group)."""
    root = stem(term)
    if not term.isalpha() or len(root) < MIN_STEM:
        return (term,)
    found = dict.fromkeys([term])
    bases = _bases(root)
    for suffix in _SUFFIXES:
        for base in bases:
            # As the analyser stores the word: its light plural stemmer, stop words dropped.
            terms = lexical.analyse(base + suffix)
            if len(terms) == 1 and stem(terms[0]) == root:
                found.setdefault(terms[0])
    return tuple(found)[:cap]


def groups(terms: Iterable[str], cap: int = MAX_VARIANTS) -> list[tuple[str, ...]]:
    """The stem groups of a query's ``terms``, one per distinct stem in first-seen order: the
    ``variants`` of the terms sharing it, merged (a query's words of one stem ask once)."""
    by_stem: dict[str, dict[str, None]] = {}
    for term in terms:
        by_stem.setdefault(stem(term), {}).update(dict.fromkeys(variants(term, cap)))
    return [tuple(forms) for forms in by_stem.values()]
