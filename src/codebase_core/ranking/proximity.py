"""Query words found together in a candidate (step 3 of ``rerank``): evidence BM25's bag of
words ignores. A question's words next to each other ("event loop", "query builder", "rate
limit") name one thing, and code that names it writes them together: ``event_loop``,
``QueryBuilder``, ``rate_limit``, or "the event loop" in a comment. A chunk holding both words
far apart scores the same in BM25.

The query's *pairs* are its adjacent words, each split into its parts as the lexical analyser
splits identifiers (stop words and language names dropped, so "handle of the request" pairs
``handle`` with ``request``). A candidate holds a pair when its two words stand within
``window`` words of each other in its text, in either order (``window`` 0: inside one
identifier, ``eventLoop``); its share is the part of the query's pairs it holds. Only the
candidates' texts are read, which the search has already: no index change.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import Chunk

Pair = tuple[str, str]


def query_pairs(text: str) -> tuple[Pair, ...]:
    """The query's adjacent words (analysed parts, without language names), each pair once
    in either order, first seen first; a word repeated next to itself is no pair."""
    parts = [p for word in lexical.word_parts(text) for p in word]
    parts = [p for p in parts if p not in lexical.LANGUAGE_WORDS]
    pairs: dict[Pair, None] = {}
    for a, b in itertools.pairwise(parts):
        # A pair is found in either order: "union and discriminated union" pairs them once.
        if a != b and (b, a) not in pairs:
            pairs[(a, b)] = None
    return tuple(pairs)


def _needle(term: str) -> str:
    """Letters every word analysed to ``term`` holds, lower-cased: the plural stemmer turns
    ``-ies`` into ``-y`` and otherwise only cuts an ending off."""
    return term.removesuffix("y")


# A search's candidates are mostly the chunks of the last searches: their words are kept.
@functools.lru_cache(maxsize=4_096)
def _words(content: str) -> tuple[tuple[str, ...], ...]:
    return tuple(lexical.word_parts(content))


def _within(xs: Sequence[int], ys: Sequence[int], window: int) -> bool:
    """Whether some position of ``xs`` and some of ``ys`` (both ascending) are at most
    ``window`` apart."""
    i = j = 0
    while i < len(xs) and j < len(ys):
        if abs(xs[i] - ys[j]) <= window:
            return True
        if xs[i] < ys[j]:
            i += 1
        else:
            j += 1
    return False


def pairs_found(content: str, pairs: Sequence[Pair], window: int) -> frozenset[Pair]:
    """The ``pairs`` whose words stand within ``window`` words of each other in ``content``,
    in either order (``window`` 0: as consecutive parts of one identifier)."""
    low = content.lower()
    # Both words' letters in the text, or no analysis (most candidates lack some pair).
    maybe = [p for p in pairs if _needle(p[0]) in low and _needle(p[1]) in low]
    if not maybe:
        return frozenset()
    words = _words(content)
    if window <= 0:
        joined = {(a, b) for w in words if len(w) > 1 for a, b in itertools.pairwise(w)}
        return frozenset(p for p in maybe if p in joined or (p[1], p[0]) in joined)
    wanted = {t for p in maybe for t in p}
    at: dict[str, list[int]] = defaultdict(list)
    i = 0
    for w in words:
        for part in w:
            if part in wanted:
                at[part].append(i)
            i += 1
    return frozenset(p for p in maybe if _within(at[p[0]], at[p[1]], window))


def proximity_shares(
    chunks: Mapping[str, Chunk], pairs: Sequence[Pair], window: int
) -> dict[str, float]:
    """Each chunk's share of the query's ``pairs`` it holds (ids of chunks holding none are
    left out)."""
    if not pairs:
        return {}
    out: dict[str, float] = {}
    for cid, c in chunks.items():
        found = pairs_found(c.content, pairs, window)
        if found:
            out[cid] = len(found) / len(pairs)
    return out
