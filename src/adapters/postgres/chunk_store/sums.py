"""The BM25 of the chunks holding a search's terms (``terms.Term``): every chunk's sum
(``combined``), or only those that may reach the search's top (``ranked``).

A chunk's sum adds its terms' contributions one by one in key order, from 0.0, however it is
computed (``np.bincount`` over the concatenated postings, or lookups term by term): every path
gives the same floats, to the last bit.

``ranked`` cuts the work of a search holding a common term (a million postings at a million
chunks) as MaxScore does: a chunk's sum is at most the sum of its terms' reach (``idf * (k1
+ 1)``), and a common term's is small. Terms by reach, largest first: for the first ``j``
terms, the ``k`` chunks whose contributions of those terms sum highest are summed exactly,
and the least of those sums is a floor under the search's ``k``-th best. Once what the other
terms together can give a chunk is below the floor (less the tie tolerance, with room for
rounding), no chunk holding none of the first terms can reach the top or tie with it, and
one holding some reaches it only if its first terms' sum plus the others' reach does: those
few are summed exactly, every term's contribution looked up. The count of chunks holding any
term is still exact (their union).
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
# A chunk's lookup (a binary search in each term) costs about as much as summing this many
# postings: a cut that leaves more chunks than the postings over this and the terms is dearer.
PRUNE_LOOKUPS: Final = 4

Sums = tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]", float]


def combined(terms: Mapping[int, Term | None]) -> Sums | None:
    """The chunks holding any of ``terms`` (ascending), with their summed BM25 (terms in key
    order), and the query's BM25 bound (over every term given, with postings here or not);
    None when no term is given."""
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
    and the number of chunks holding any term; None when no term is given. Past
    ``PRUNE_POSTINGS`` postings, by the cut of the module docstring when one exists, else
    every chunk."""
    present = [(key, t) for key, t in sorted(terms.items()) if t is not None]
    if not present:
        return None
    # A term without postings here (a filter's) counts in the bound alone.
    held = [(key, t) for key, t in present if t.size]
    if len(held) > 1 and sum(t.size for _, t in held) > PRUNE_POSTINGS:
        bound = lexical.upper_bound(t.idf for _, t in present)
        found = _pruned(held, max(1, int(limit)), bound)
        if found is not None:
            return found
    whole = combined(dict(present))
    assert whole is not None
    seqs, raw_scores, bound = whole
    return seqs, raw_scores, bound, len(seqs)


def _pruned(
    present: list[tuple[int, Term]], k: int, bound: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], float, int] | None:
    """``ranked`` by the cut of the module docstring; None when fewer than ``k`` chunks hold
    a term, or when every cut leaves so many chunks that looking their terms up would cost
    more than summing every posting (a question of common words alone: their reach is far
    above what most of their chunks get)."""
    import numpy as np

    by_reach = sorted(present, key=lambda kt: -kt[1].idf)
    reach = [t.idf * (lexical.K1 + 1.0) for _, t in by_reach]
    postings = sum(t.size for _, t in present)
    for j in range(1, len(by_reach) + 1):
        seqs, partial = _partial([t for _, t in by_reach[:j]])
        if len(seqs) < k:
            continue
        # A floor under the k-th best sum: the least of k chunks' sums (those whose first
        # terms sum highest), each summed exactly.
        kth = np.partition(partial, len(partial) - k)[len(partial) - k]
        floor = float(_sums(present, seqs[partial >= kth]).min()) - TIE_TOLERANCE * bound
        others = sum(reach[j:]) * (1.0 + PRUNE_MARGIN)
        if others >= floor:
            continue  # a chunk holding none of the first terms might reach the top
        # A chunk of the first terms reaches the top only if its first terms' sum and all
        # the others' reach it.
        keep = partial + (others + PRUNE_MARGIN * bound) >= floor
        if np.count_nonzero(keep) * len(present) * PRUNE_LOOKUPS > postings:
            continue  # their lookups would cost more than summing every posting
        cand = seqs[keep]
        return cand, _sums(present, cand), bound, _count(present)
    return None


def _partial(first: list[Term]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The chunks holding any of ``first`` (ascending), each with those terms' sum (in any
    order: a sum for choosing candidates, not a score)."""
    import numpy as np

    if len(first) == 1:
        return first[0].seqs, first[0].contrib()
    return summed(
        np.concatenate([t.seqs for t in first]), np.concatenate([t.contrib() for t in first])
    )


def _sums(present: list[tuple[int, Term]], cand: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The BM25 of the chunks ``cand`` (ascending), each term's contribution looked up and
    added in key order, from 0.0: as ``combined`` sums them."""
    import numpy as np

    out = np.zeros(len(cand), dtype=np.float64)
    for _, term in present:
        at = np.searchsorted(term.seqs, cand)
        at[at == term.size] = 0
        hit = term.seqs[at] == cand
        out[hit] += term.contrib(at[hit])
    return out


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
