"""Which of a question's words a file is named after, and how much that says.

A developer's question names its subject first ("how *middleware* chains context between
procedures", "*form* data binding for URL-encoded requests"); the words after it set the
scene. A file named after the subject is likelier the answer than one named after a word of
the scene, so the stem boost weighs a file by the position of the word it is named after.
File names shorten words as often as they spell them (``impls.rs`` for "implementations",
``utils.go`` for "utility"), so a stem that begins a longer query word names it too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.ranking import paths
from codebase_mcp_search.core.ranking.query import QueryProfile


def _content(word: str) -> bool:
    return len(word) >= 3 and word not in lexical.STOP_WORDS


def word_positions(
    profile: QueryProfile, strip: Callable[[str], str]
) -> tuple[dict[str, int], dict[str, int]]:
    """The forms a file stem is compared with -> the position, from 0 among the question's
    content words, of the earliest word each comes from: one word's forms (as typed,
    ``from_json`` -> ``fromjson``, and its parts ``from``, ``json``), then two words in a row
    (``thread pool`` -> ``threadpool``, at the first one's position); each through ``strip``
    (``path_words.stem``: without a form-changing ending)."""
    single: dict[str, int] = {}
    at: list[int] = []
    words: list[str] = []
    pos = 0
    for token in profile.tokens:
        norm = paths.normalise_name(token)
        kept = [strip(f) for f in (norm, *lexical.analyse(token)) if _content(f)]
        words.append(norm)
        at.append(pos)
        for form in kept:
            single.setdefault(form, pos)
        pos += 1 if kept else 0
    pairs: dict[str, int] = {}
    for i, (a, b) in enumerate(itertools.pairwise(words)):
        if a and b and a not in lexical.STOP_WORDS and b not in lexical.STOP_WORDS:
            pairs.setdefault(strip(a + b), at[i])
    return single, pairs


def abbreviates(name: str, form: str, least: int) -> bool:
    """Whether a file stem ``name`` (``impl``, ``util``) shortens the query word ``form``
    (``implementation``, ``utility``): at least ``least`` letters, the word's beginning, and
    the word at least two letters longer (``parse`` does not shorten ``parser``)."""
    return len(name) >= least and len(form) >= len(name) + 2 and form.startswith(name)


def position_finder(
    single: Mapping[str, int], pairs: Mapping[str, int], least: int
) -> Callable[[frozenset[str]], int | None]:
    """For a file's stem ``names`` (through the ``strip`` of ``word_positions``): the earliest
    position of a word or two-word form one of them spells, or, with ``least`` > 0, of a
    single word one abbreviates to at least ``least`` letters (``func`` shortens "functor",
    not "functor type"); None when they name none. The words are indexed by their first
    ``least`` letters once per query, as a search compares them with every candidate file."""
    by_prefix: dict[str, list[tuple[str, int]]] = {}
    if least > 0:
        for form, pos in single.items():
            if len(form) >= least + 2:
                by_prefix.setdefault(form[:least], []).append((form, pos))

    def find(names: frozenset[str]) -> int | None:
        found = [p for n in names for p in (single.get(n), pairs.get(n)) if p is not None]
        for n in names:
            if least > 0 and len(n) >= least:
                shortened = by_prefix.get(n[:least], ())
                found.extend(p for f, p in shortened if abbreviates(n, f, least))
        return min(found, default=None)

    return find


def position_share(position: int, full: int) -> float:
    """The stem boost's share for a file named after the question's ``position``-th content
    word: all of it for the first ``full`` words, ``full / (position + 1)`` after."""
    return min(1.0, full / (position + 1))
