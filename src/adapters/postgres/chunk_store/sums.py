"""The BM25 of the chunks holding a search's terms (``terms.Term``): every chunk's sum
(``combined``), or only those that may reach the search's top (``ranked``).

A chunk's sum adds its terms' contributions one by one in key order, from 0.0, however it is
computed (``np.bincount`` over the concatenated postings, or lookups term by term): every path
gives the same floats, to the last bit.

``ranked`` cuts the work of a search holding a common term (a million postings at a million
chunks) as MaxScore does: a chunk's sum is at most the sum of its terms' bounds (``idf *
(k1 + 1)``), and a common term's is small. Terms by bound, largest first: the chunks of the
first ``j`` terms are summed exactly (every term's contribution looked up), and once the
``k``-th best of those sums exceeds what the other terms together can give a chunk (less the
tie tolerance, with room for rounding), no chunk holding only those can reach the top or tie
with it. The count of chunks holding any term is still exact (their union).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import (
    DENSE_SLACK,
    DENSE_SPAN,
    summed,
)
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term
from codebase_mcp_search.core import lexical

if TYPE_CHECKING:
    import numpy as np

# Scores closer than this (relative to the query's BM25 bound) may round to the same normalised
# score (``lexical.normalised`` keeps 9 decimals): they are ties, broken by path and line.
TIE_TOLERANCE: Final = 2e-9
# Past this many postings a search sums only the chunks that may reach its top (``ranked``).
PRUNE_POSTINGS: Final = 100_000
# What the terms left out may give a chunk, raised by this share: room for the rounding of a
# sum of floats (each contribution is below its bound, and a sum of a few rounds by far less).
PRUNE_MARGIN: Final = 1e-9

Sums = tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]", float]


def combined(terms: Mapping[int, Term | None]) -> Sums | None:
    """The chunks holding any of ``terms`` (ascending), with their summed BM25 (terms in key
    order), and the query's BM25 bound; None when no term has postings."""
    import numpy as np

    present = [(key, t) for key, t in sorted(terms.items()) if t is not None]
    if not present:
        return None
    all_seqs = np.concatenate([t.seqs for _, t in present])
    all_contrib = np.concatenate([t.contrib() for _, t in present])
    seqs, raw_scores = summed(all_seqs, all_contrib)
    return seqs, raw_scores, lexical.upper_bound(t.idf for _, t in present)


def ranked(
    terms: Mapping[int, Term | None], limit: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], float, int] | None:
    """The chunks that may be among the top ``limit`` of ``terms`` by BM25 (ties within
    ``TIE_TOLERANCE`` included), each with its sum as ``combined`` gives it, the query's bound,
    and the number of chunks holding any term; None when no term has postings. Past
    ``PRUNE_POSTINGS`` postings, by the cut of the module docstring when one exists, else
    every chunk."""
    present = [(key, t) for key, t in sorted(terms.items()) if t is not None]
    if not present:
        return None
    if len(present) > 1 and sum(t.size for _, t in present) > PRUNE_POSTINGS:
        found = _pruned(present, max(1, int(limit)))
        if found is not None:
            return found
    whole = combined(dict(present))
    assert whole is not None
    seqs, raw_scores, bound = whole
    return seqs, raw_scores, bound, len(seqs)


def _pruned(
    present: list[tuple[int, Term]], k: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], float, int] | None:
    """``ranked`` by the cut; None when no cut leaves fewer than half the postings to sum."""
    import numpy as np

    bound = lexical.upper_bound(t.idf for _, t in present)
    by_reach = sorted(present, key=lambda kt: -kt[1].idf)
    reach = [t.idf * (lexical.K1 + 1.0) for _, t in by_reach]
    postings = sum(t.size for _, t in present)
    for j in range(1, len(by_reach)):
        first = [t for _, t in by_reach[:j]]
        if 2 * sum(t.size for t in first) > postings:
            return None
        cand = first[0].seqs if j == 1 else np.unique(np.concatenate([t.seqs for t in first]))
        if len(cand) < k:
            continue
        raw_scores = np.zeros(len(cand), dtype=np.float64)
        for _, term in present:  # key order: each chunk's sum as ``combined`` adds it
            at = np.searchsorted(term.seqs, cand)
            at[at == term.size] = 0
            hit = term.seqs[at] == cand
            raw_scores[hit] += term.contrib(at[hit])
        kth = float(np.partition(raw_scores, len(cand) - k)[len(cand) - k])
        others = sum(reach[j:]) * (1.0 + PRUNE_MARGIN)
        if others < kth - TIE_TOLERANCE * bound:
            return cand, raw_scores, bound, _count(present)
    return None


def _count(present: list[tuple[int, Term]]) -> int:
    """The number of chunks holding any of the terms."""
    import numpy as np

    lo = min(int(t.seqs[0]) for _, t in present)
    span = max(int(t.seqs[-1]) for _, t in present) - lo + 1
    if span > DENSE_SPAN * sum(t.size for _, t in present) + DENSE_SLACK:
        return len(np.unique(np.concatenate([t.seqs for _, t in present])))
    held = np.zeros(span, dtype=bool)
    for _, t in present:
        held[t.seqs - lo] = True
    return int(np.count_nonzero(held))
