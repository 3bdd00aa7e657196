"""Stem groups (``models.StemGroup``) among a search's terms: each group scored as one more
term, its postings merged from those of its terms (``grouped``).

A group's terms are read as any query term is (``terms_read.TERMS``, in the one statement of
the search), so each comes with the project's document frequency beside its postings (a
filter's, when filtered). The merged term holds, per chunk holding any of them, the sum of
their frequencies (the chunk's length as the chunk's); its document frequency is the sum of
theirs, at most the project's chunk count (no chunk's postings are merged in the database),
and its idf that of such a term times the group's weight. Its key lies above every term key
(signed 64-bit): the sums of ``sums`` add a chunk's terms in key order, so the groups'
contributions come after the query terms', in the groups' order, in every path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from codebase_mcp_search.adapters.postgres.chunk_store.blocks import (
    document_frequencies,
    plain_elements,
    statistics,
)
from codebase_mcp_search.adapters.postgres.chunk_store.rows import term_key
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import StemGroup

if TYPE_CHECKING:
    import numpy as np

# The key of group ``i``'s merged term: past the int64 range of term keys (``rows.term_key``).
GROUP_KEYS: Final = 2**64
# A group: its terms' keys (distinct) and its weight.
Group: TypeAlias = tuple[tuple[int, ...], float]
Stems: TypeAlias = Sequence[StemGroup]


def search_keys(terms: Iterable[str], stems: Stems) -> tuple[list[int], tuple[Group, ...]]:
    """The distinct keys of the query ``terms`` and the groups of ``stems`` by key (a group
    without terms left out: it adds nothing)."""
    keys = list(dict.fromkeys(term_key(t) for t in terms))
    groups = tuple((tuple(dict.fromkeys(term_key(t) for t in g.terms)), g.weight) for g in stems)
    return keys, tuple(g for g in groups if g[0])


def read_keys(keys: Sequence[int], groups: Sequence[Group]) -> list[int]:
    """Every term key to read: the query's, then the groups' (distinct)."""
    return list(dict.fromkeys([*keys, *(k for group, _ in groups for k in group)]))


def grouped(
    terms: Mapping[int, Term | None], keys: Sequence[int], groups: Sequence[Group]
) -> dict[int, Term | None]:
    """The terms of the query ``keys`` (as read: ``terms``), and each group's merged term at
    ``GROUP_KEYS + i`` (group ``i``), none for a group of which the project holds no term
    (a term of ``terms`` without postings: None, or not read). A term of both the query and a
    group counts in both."""
    out = {k: terms.get(k) for k in keys}
    for i, (group, weight) in enumerate(groups):
        held = [t for t in (terms.get(k) for k in group) if t is not None]
        if held:
            out[GROUP_KEYS + i] = merged(held, weight)
    return out


def merged(held: Sequence[Term], weight: float) -> Term:
    """One term of the postings of ``held`` (terms read together: one project's chunk count
    and average length): each chunk's frequencies summed, seqs ascending; the project's
    document frequency the sum of theirs, at most its chunk count, the idf ``weight`` times
    that of a term so frequent."""
    first = held[0]
    n_docs = first.n_docs
    df = min(n_docs, sum(t.df for t in held))
    idf = weight * lexical.idf(n_docs, df)
    seqs, tfs, lens = _union(held)
    return Term(seqs, tfs, lens, idf, first.avg, df, n_docs)


def _union(
    held: Sequence[Term],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The distinct seqs of ``held``'s postings (ascending), each with the sum of its
    frequencies (int64: frequencies kept in a byte or two may sum past them) and its length."""
    import numpy as np

    present = [t for t in held if t.size]
    if len(present) == 1:  # its postings as they are (ascending, distinct)
        t = present[0]
        return t.seqs, t.tfs, t.lens
    if not present:
        none = np.zeros(0, dtype=np.int64)
        return none, none, none
    seqs = np.concatenate([t.seqs for t in present]).astype(np.int64, copy=False)
    order = np.argsort(seqs, kind="stable")
    seqs = seqs[order]
    starts = np.flatnonzero(np.concatenate(([True], seqs[1:] != seqs[:-1])))
    tfs = np.concatenate([t.tfs.astype(np.int64) for t in present])[order]
    lens = np.concatenate([t.lens.astype(np.int64) for t in present])[order]
    return seqs[starts], np.add.reduceat(tfs, starts), lens[starts]


def plain_sums(
    row: Mapping[str, Any] | None, keys: Sequence[int], groups: Sequence[Group]
) -> tuple[list[int], list[float], float] | None:
    """``grouped`` summed as ``sums.combined`` sums it, in plain Python, for a small row of
    blocks (no packed terms) read in a process without numpy (``blocks.plain_row``: a lexical
    search from the command line loads no numpy): each chunk holding a term (ascending) with
    its raw BM25, the query terms' contributions in key order and then the groups', and the
    query's bound; None when no block matched."""
    if row is None or row["terms"] is None:
        return None
    n_docs = int(row["n_docs"])
    avg, idf_of = statistics(row)
    dfs = document_frequencies(row)
    sizes = [int(n) for n in row["sizes"]]
    seqs = plain_elements(row["chunks"], sizes, "q")
    tfs = plain_elements(row["tfs"], sizes, "i")
    lens = plain_elements(row["doc_lens"], sizes, "i")
    # Each term's postings: chunk -> (frequency, length).
    postings: dict[int, dict[int, tuple[int, int]]] = {}
    at = 0
    for term, size in zip(row["terms"], sizes, strict=True):
        held = postings.setdefault(int(term), {})
        for i in range(at, at + size):
            held[seqs[i]] = (tfs[i], lens[i])
        at += size
    lists = [(postings.get(k, {}), idf_of[k]) for k in sorted(keys) if k in idf_of]
    for group, weight in groups:
        forms = [k for k in group if k in dfs]
        if not forms:
            continue
        merged: dict[int, tuple[int, int]] = {}
        for k in forms:
            for seq, (tf, length) in postings.get(k, {}).items():
                was = merged.get(seq)
                merged[seq] = (tf, length) if was is None else (was[0] + tf, was[1])
        df = min(n_docs, sum(dfs[k] for k in forms))
        lists.append((merged, weight * lexical.idf(n_docs, df)))
    sums: dict[int, float] = {}
    for held, idf in lists:
        for seq, (tf, length) in held.items():
            sums[seq] = sums.get(seq, 0.0) + lexical.term_score(tf, length, avg, idf)
    ordered = sorted(sums)
    return ordered, [sums[s] for s in ordered], lexical.upper_bound(idf for _, idf in lists)
