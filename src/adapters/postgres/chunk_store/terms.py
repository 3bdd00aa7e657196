"""The postings of a search's terms (``Term``), from a row of ``terms_read.TERMS``
(``terms_of``).

A term is read from its blocks, or, when the project's last packed build holds it, from its
packed value (``adapters.postgres.packed``; its chunks' lengths from the build's, which
``HeldLengths`` keeps by build) corrected by the writes logged since the build: the chunks
deleted since (``gone``) are taken out, and the blocks of the chunks inserted since (the row's
blocks of that term) are added, less any chunk the packed value holds already (two writers'
seqs may interleave: a logged range can hold a chunk of a write the build saw). Chunk rows
never change, so that is the term's postings now, exactly; its document frequency is their
number. A filtered search then cuts it to the chunks passing the filter (the row's
``matches``), its idf the project's, as the blocks of a filter give it. A term keeps each
posting's frequency and chunk length, and computes contributions (``blocks.contributions``)
only where a sum needs them (``sums``): the same floats whichever postings are asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import asyncpg

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, Slot
from codebase_mcp_search.adapters.postgres.chunk_store.blocks import (
    contributions,
    document_frequencies,
    raw,
    statistics,
)
from codebase_mcp_search.core import lexical

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class Term:
    """One term's postings: the chunks holding it (one posting each, ascending), each one's
    term frequency and length, the term's idf and the project's average chunk length; and
    the document frequency and chunk count that idf is of (the project's, whatever the
    postings a filter left: what a stem group of terms sums, ``stem_terms``)."""

    seqs: np.ndarray[Any, Any]
    tfs: np.ndarray[Any, Any]
    lens: np.ndarray[Any, Any]
    idf: float
    avg: float
    df: int
    n_docs: int

    @property
    def size(self) -> int:
        return len(self.seqs)

    @property
    def nbytes(self) -> int:
        return int(self.seqs.nbytes + self.tfs.nbytes + self.lens.nbytes)

    def contrib(self, at: Any = slice(None)) -> np.ndarray[Any, Any]:
        """The BM25 contributions of the postings ``at`` (all by default)."""
        return contributions(self.tfs[at], self.lens[at], self.avg, self.idf)

    def owned(self) -> Term:
        """This term with arrays of their own (not views of a larger buffer)."""
        seqs, tfs, lens = _owned(self.seqs), _owned(self.tfs), _owned(self.lens)
        if seqs is self.seqs and tfs is self.tfs and lens is self.lens:
            return self
        return Term(seqs, tfs, lens, self.idf, self.avg, self.df, self.n_docs)


def _owned(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    base = array.base
    if base is None:
        return array
    size = base.nbytes if hasattr(base, "nbytes") else len(base)
    return array if size <= array.nbytes else array.copy()


def groups(terms: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any]) -> dict[int, Any]:
    """Each term's postings among blocks of ``terms`` and ``sizes``: a slice when its blocks
    are adjacent, else the postings' indexes, in the row's order (grouped by block, not by
    posting: a common term has a block in most files)."""
    import numpy as np

    ends = np.cumsum(sizes)
    starts = ends - sizes
    order = np.argsort(terms, kind="stable")
    in_order = terms[order]
    cuts = np.flatnonzero(in_order[1:] != in_order[:-1]) + 1
    out: dict[int, Any] = {}
    for group in np.split(order, cuts):
        first, last = int(group[0]), int(group[-1])
        if last - first + 1 == len(group):  # adjacent blocks: one slice
            out[int(terms[first])] = slice(int(starts[first]), int(ends[last]))
        else:
            part = sizes[group]
            # Each posting's index: its block's start, plus its rank within the block.
            shift = starts[group] - (np.cumsum(part) - part)
            out[int(terms[first])] = np.repeat(shift, part) + np.arange(int(part.sum()))
    return out


@dataclass(frozen=True, slots=True)
class Lengths:
    """The lengths of the chunks of a packed build, by seq from ``lo``."""

    lo: int
    by_seq: np.ndarray[Any, Any]

    def of(self, seqs: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        found: np.ndarray[Any, Any] = self.by_seq[seqs - self.lo]
        return found


# Bytes of held lengths beyond their array.
LENGTHS_OVERHEAD: Final = 200


class HeldLengths:
    """The lengths of the project's last packed build, kept by (epoch, build): a build never
    changes (a new one has another id). Accounted to ``ledger`` as ``project``'s
    ``lengths``; ``keep`` False holds nothing (every read asks for them)."""

    def __init__(
        self, ledger: CacheLedger | None = None, project: str = "", *, keep: bool = True
    ) -> None:
        self._keep = keep
        self._held: Slot[tuple[int, int, Lengths]] = Slot(ledger, project, "lengths")

    def build(self) -> int:
        """The build whose lengths are held (-1: none): a read need not send them again."""
        held = self._held.value
        return held[1] if held is not None else -1

    def clear(self) -> None:
        self._held.clear()

    def of(self, row: asyncpg.Record | Mapping[str, Any]) -> Lengths | None:
        """The lengths of the build of a row holding packed terms: sent with it (then held),
        or held already; None when neither (let go since the read asked: read again)."""
        from codebase_mcp_search.adapters.postgres.packed import unpack_lengths

        epoch, build = int(row["epoch"]), int(row["p_build"])
        if row["p_lengths"] is not None:
            lo, by_seq = unpack_lengths(row["p_lengths"])
            lengths = Lengths(lo, by_seq)
            size = LENGTHS_OVERHEAD + len(row["p_lengths"])
            if self._keep:
                self._held.keep((epoch, build, lengths), size)
            return lengths
        held = self._held.value
        if held is not None and held[:2] == (epoch, build):
            self._held.touch()
            return held[2]
        return None


class Read(Mapping[str, Any]):
    """A ``terms_read.TERMS`` row with the packed values of its packed terms (``p_data``,
    in the order of ``p_terms``), read by a statement of their own."""

    def __init__(self, row: asyncpg.Record, data: Mapping[int, bytes]) -> None:
        self._row = row
        self._data = [data[int(t)] for t in row["p_terms"]]

    def __getitem__(self, key: str) -> Any:
        return self._data if key == "p_data" else self._row[key]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._row.keys(), "p_data"])

    def __len__(self) -> int:
        return len(self._row) + 1


def has_packed(row: asyncpg.Record | Mapping[str, Any]) -> bool:
    """Whether ``row`` holds packed terms (a row of the blocks alone has no such column)."""
    return "p_terms" in row and row["p_terms"] is not None


def terms_of(
    row: asyncpg.Record | Mapping[str, Any] | None,
    keys: Sequence[int],
    lengths: Lengths | None = None,
) -> tuple[int, int, dict[int, Term | None]] | None:
    """The (epoch, generation, terms) of a row read for the term ``keys``: each key's postings
    (a filtered row's: those passing the filter, possibly none, the idf the project's), None
    for a key the project holds no posting of; None when the row holds no project statistics.
    A row holding packed terms needs its build's ``lengths``."""
    if row is None or row["n_docs"] is None:
        return None
    epoch, generation, n_docs = int(row["epoch"]), int(row["generation"]), int(row["n_docs"])
    found: dict[int, Term | None] = dict.fromkeys(keys)
    avg, idf_of = statistics(row)
    df_of = document_frequencies(row)
    blocks = raw(row)
    at_of = groups(blocks.terms, blocks.sizes) if blocks is not None else {}
    for key, idf in idf_of.items():  # the terms read from their blocks alone
        at = at_of.get(key)
        stats = (idf, avg, df_of[key], n_docs)
        if at is None:  # none of its blocks passes the filter: no posting, still its bound
            found[key] = _empty(*stats)
            continue
        assert blocks is not None
        found[key] = _ascending(blocks.chunks[at], blocks.tfs[at], blocks.lens[at], *stats)
    if has_packed(row):
        if lengths is None:
            raise ValueError("packed terms are read with their build's lengths")
        packed = _packed(row, lengths, blocks, at_of, avg)
        if row.get("matches") is not None:  # filtered: the packed terms cut to the filter's chunks
            matching = _seqs(row["matches"])
            packed = {k: t if t is None else _within(t, matching) for k, t in packed.items()}
        found.update(packed)
    return epoch, generation, found


def _empty(idf: float, avg: float, df: int, n_docs: int) -> Term:
    """A term with no posting among the chunks searched (one the project holds elsewhere)."""
    import numpy as np

    none = np.zeros(0, dtype=np.int64)
    return Term(none, none, none, idf, avg, df, n_docs)


def _seqs(data: bytes) -> np.ndarray[Any, Any]:
    """The seqs of an int8[] in its wire format, ascending."""
    import numpy as np

    from codebase_mcp_search.adapters.postgres.chunk_store.blocks import elements

    if int.from_bytes(data[:4], "big") == 0:  # no dimension: empty
        return np.zeros(0, dtype=np.int64)
    size = int.from_bytes(data[12:16], "big")
    return np.sort(elements(data, np.asarray([size]), ">i8"))


def _within(term: Term, matching: np.ndarray[Any, Any]) -> Term:
    """``term``'s postings of the chunks ``matching`` (ascending), its idf the project's."""
    import numpy as np

    stats = (term.idf, term.avg, term.df, term.n_docs)
    if term.size == 0 or len(matching) == 0:
        return _empty(*stats)
    at = np.searchsorted(term.seqs, matching)
    at[at == term.size] = 0
    at = at[term.seqs[at] == matching]
    return Term(term.seqs[at], term.tfs[at], term.lens[at], *stats)


def _packed(
    row: asyncpg.Record | Mapping[str, Any],
    lengths: Lengths,
    blocks: Any,
    at_of: Mapping[int, Any],
    avg: float,
) -> dict[int, Term | None]:
    """The packed terms of ``row``, corrected by the writes since their build (see the module
    docstring); ``blocks`` holds the postings inserted since, ``at_of`` each term's."""
    import numpy as np

    from codebase_mcp_search.adapters.postgres.packed import unpack

    n_docs = int(row["n_docs"])
    gone = np.unique(np.asarray(row["gone"] or (), dtype=np.int64))
    out: dict[int, Term | None] = {}
    for key, data in zip(row["p_terms"], row["p_data"], strict=True):
        seqs, tfs = unpack(data)
        lens = lengths.of(seqs)
        parts = [(seqs, tfs, lens)]
        if len(gone):
            kept = ~_member(seqs, gone)
            parts = [(seqs[kept], tfs[kept], lens[kept])]
        at = at_of.get(int(key))
        if at is not None:  # chunks inserted since the build
            new = blocks.chunks[at]
            fresh = ~_member(new, seqs)
            parts.append((new[fresh], blocks.tfs[at][fresh], blocks.lens[at][fresh]))
        df = sum(len(p[0]) for p in parts)
        if df == 0:
            out[int(key)] = None
            continue
        idf = lexical.idf(n_docs, df)
        if len(parts) == 1:  # as packed, or less the chunks deleted: in chunk order
            out[int(key)] = Term(*parts[0], idf, avg, df, n_docs)
        else:
            out[int(key)] = _ascending(
                np.concatenate([p[0] for p in parts]),
                np.concatenate([p[1].astype(np.int64) for p in parts]),
                np.concatenate([p[2].astype(np.int64) for p in parts]),
                idf,
                avg,
                df,
                n_docs,
            )
    return out


def _ascending(
    seqs: np.ndarray[Any, Any],
    tfs: np.ndarray[Any, Any],
    lens: np.ndarray[Any, Any],
    idf: float,
    avg: float,
    df: int,
    n_docs: int,
) -> Term:
    """The ``Term`` of these postings, put in chunk order if they are not (a term's blocks
    come in the order of the table's pages, and a file's blocks of two languages interleave)."""
    import numpy as np

    if len(seqs) > 1 and not bool(np.all(seqs[1:] > seqs[:-1])):
        order = np.argsort(seqs, kind="stable")
        seqs, tfs, lens = seqs[order], tfs[order], lens[order]
    return Term(seqs, tfs, lens, idf, avg, df, n_docs)


def _member(values: np.ndarray[Any, Any], ascending: np.ndarray[Any, Any]) -> Any:
    """Whether each of ``values`` is among ``ascending`` (sorted, distinct)."""
    import numpy as np

    if len(ascending) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.searchsorted(ascending, values)
    at[at == len(ascending)] = 0
    return ascending[at] == values
