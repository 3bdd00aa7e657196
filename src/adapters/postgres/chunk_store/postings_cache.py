"""The postings of a project's terms with their BM25 contributions, kept in the process for
lexical searches without filters (``HeldPostings``, over ``lexical_search.LexicalSearch``).

Between two writes a term's postings and every input of their BM25 (the project's document
count and average length, the term's document frequency) stay the same, so each posting's
contribution does too. A search without filters takes its terms' contributions from here and
sums them per chunk: no statement when every term is held (and its top chunks are at hand),
and one read of the others otherwise (``terms_read.TERMS``, as an unfiltered
search reads them). A filtered search is the plain search's. A stem group's terms are held
as any term; their merged term (``stem_terms``) is made for each search and never held (a
group is a query's, its key the search's own).

What is held is of one generation of the project, under the change token taken before it was
read (``adapters.postgres.changes``). Once the token moves on (a write seen, the trust window
passed), nothing held answers until a read of the query's terms gives the generation again:
the same one keeps everything held (under the new token), another one replaces it. Without
a token (no listening connection) nothing is held or used, and the plain search answers. A
term without postings is held too, as none. Bounded by postings, the least
recently used terms out first, and by the process's budget (``cache_ledger``), charged
``term_bytes`` a term (its arrays are copies of their own, so that their bytes are all they
keep alive, not the block of the statement's result they were cut from): 11 to 24 bytes a
posting (its chunk, frequency and length; contributions are computed when summed).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, unbounded
from codebase_mcp_search.adapters.postgres.changes import Token
from codebase_mcp_search.adapters.postgres.chunk_store.filters import NO_FILTERS
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import (
    THREAD_POSTINGS,
    LexicalSearch,
    Scored,
    ranked_scores,
)
from codebase_mcp_search.adapters.postgres.chunk_store.stem_terms import (
    Group,
    grouped,
    read_keys,
)
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters

if TYPE_CHECKING:
    import numpy as np

# A filtered search whose terms are all held is scored from them when at most this many
# chunks pass its directory filter (a file, a small folder: the files a question names by
# path, ``path_files``); a wider filter reads the postings of its chunks
# (``terms_read.TERMS_FILTERED``).
NARROW_FILTER: Final = 2_000
# Terms held at most, postings or none (a term without postings costs its entry alone).
MAX_TERMS = 100_000
# Bytes a held term costs beyond its arrays' data: the ``Term``, three array headers, its key
# and dict slot (a term without postings: the key and slot alone).
TERM_OVERHEAD: Final = 500
NO_TERM_BYTES: Final = 120


def term_bytes(term: Term | None) -> int:
    if term is None:
        return NO_TERM_BYTES
    return TERM_OVERHEAD + term.nbytes


@dataclass(frozen=True, slots=True)
class State:
    """The generation of the project that terms were read from."""

    token: Token
    epoch: int
    generation: int


class PostingsCache:
    """A project's terms by key (see the module docstring); ``ledger`` accounts them as
    ``project``'s ``postings``."""

    def __init__(
        self, max_postings: int, ledger: CacheLedger | None = None, project: str = ""
    ) -> None:
        self._max = max_postings
        self._state: State | None = None
        self._terms: collections.OrderedDict[int, Term | None] = collections.OrderedDict()
        self._size = 0
        self._account = (ledger or unbounded()).account(
            project, "postings", self._evict_oldest, self.clear
        )

    @property
    def state(self) -> State | None:
        return self._state

    def clear(self) -> None:
        self._state = None
        self._terms.clear()
        self._size = 0
        self._account.credit(self._account.bytes)

    def held(self, token: Token, keys: Iterable[int]) -> dict[int, Term | None]:
        """The terms of ``keys`` held for ``token`` (none for another token: what is held
        may still serve once a read finds the same generation, see ``add``)."""
        if self._state is None or self._state.token != token:
            return {}
        terms = self._terms
        out: dict[int, Term | None] = {}
        for key in keys:
            if key in terms:
                terms.move_to_end(key)
                out[key] = terms[key]
        if out:
            self._account.touch()
        return out

    def add(self, state: State, terms: Mapping[int, Term | None]) -> None:
        """Hold ``terms``, read at ``state``. What is held of another generation goes; what
        is held of the same one stays, now under ``state``'s token (the read found nothing
        written since)."""
        was = self._state
        if was is None or (was.epoch, was.generation) != (state.epoch, state.generation):
            self.clear()
        self._state = state
        for key, term in terms.items():
            if key in self._terms:
                continue
            size = term.size if term is not None else 0
            if size > self._max or not self._account.fits(term_bytes(term)):
                continue
            kept = term.owned() if term is not None else None
            self._terms[key] = kept
            self._size += size
            self._account.charge(term_bytes(kept))
        while (self._size > self._max or len(self._terms) > MAX_TERMS) and self._evict_oldest():
            pass

    def _evict_oldest(self) -> bool:
        """Let go of the least recently used term; False when none is held."""
        if not self._terms:
            return False
        _, dropped = self._terms.popitem(last=False)
        self._size -= dropped.size if dropped is not None else 0
        self._account.credit(term_bytes(dropped))
        return True


class HeldPostings:
    """``LexicalSearch`` with the postings of the terms searched kept (``PostingsCache``, of
    ``max_postings``) for searches without filters; ``token`` gives the project's change
    token."""

    def __init__(
        self,
        inner: LexicalSearch,
        token: Callable[[], Awaitable[Token | None]],
        max_postings: int,
        ledger: CacheLedger | None = None,
        project: str = "",
    ) -> None:
        self._inner = inner
        self._token = token
        self.postings = PostingsCache(max_postings, ledger, project)

    @property
    def state(self) -> State | None:
        return self.postings.state

    def clear(self) -> None:
        self.postings.clear()

    async def search(
        self,
        keys: Sequence[int],
        filters: SearchFilters,
        limit: int,
        groups: Sequence[Group] = (),
    ) -> tuple[list[ScoredChunk], int]:
        """``LexicalSearch.search``, from the postings held when it has no filters."""
        token = await self._token()
        if token is None:
            return await self._inner.search(keys, filters, limit, groups)
        within: np.ndarray[Any, Any] | None = None
        if filters != NO_FILTERS:
            within = await self._narrow(keys, groups, token, filters)
            if within is None:
                return await self._inner.search(keys, filters, limit, groups)
        scored = await self._held_scores(keys, token, limit, groups, within)
        if scored is None:
            return [], 0
        return await self._inner.top(scored, limit), scored.count

    async def _narrow(
        self, keys: Sequence[int], groups: Sequence[Group], token: Token, filters: SearchFilters
    ) -> np.ndarray[Any, Any] | None:
        """The seqs of the chunks a narrow filter passes (one with a directory: a file, a
        small folder), when every term of the search is held and of the generation those
        seqs were read in; None otherwise (the filtered read answers: no term is read here
        for one search's filter, nor scored from another generation than its chunks')."""
        if filters.directory is None:
            return None
        wanted = set(read_keys(keys, groups) if groups else keys)
        if len(self.postings.held(token, wanted)) < len(wanted):
            return None
        found = await self._inner.filter_seqs(filters, NARROW_FILTER)
        state = self.postings.state
        if found is None or state is None or (state.epoch, state.generation) != found[:2]:
            return None
        import numpy as np  # only here: a lexical search in a fresh process loads none

        return np.asarray(found[2], dtype=np.int64)

    async def _held_scores(
        self,
        query: Sequence[int],
        token: Token,
        limit: int,
        groups: Sequence[Group],
        within: np.ndarray[Any, Any] | None = None,
    ) -> Scored | None:
        """The scores of the chunks holding a term of ``query`` or of ``groups`` that may
        reach the top ``limit``, from the postings held (those not held read first; each
        group's terms held as any term, merged for the search alone); only of the chunks
        ``within`` (seqs, ascending) when given."""
        keys = read_keys(query, groups) if groups else query
        postings = self.postings
        held = postings.held(token, keys)
        missing = [k for k in keys if k not in held]
        if missing:
            read = await self._read(missing)
            if read is None:
                return None
            epoch, generation, terms = read
            state = postings.state
            if held and (state is None or (state.epoch, state.generation) != (epoch, generation)):
                # A write came between the terms held and these (its notice not yet here): all
                # of them again, from one generation.
                read = await self._read(list(keys))
                if read is None:
                    return None
                epoch, generation, terms = read
                held = {}
            postings.add(State(token, epoch, generation), terms)
            held.update(terms)
        state = postings.state
        if state is None:
            return None
        if within is not None:
            held = {k: _within(t, within) for k, t in held.items()}
        if sum(t.size for t in held.values() if t is not None) > THREAD_POSTINGS:
            return await asyncio.to_thread(_scores, held, query, groups, state.epoch, limit)
        return _scores(held, query, groups, state.epoch, limit)

    async def _read(self, keys: list[int]) -> tuple[int, int, dict[int, Term | None]] | None:
        """The postings of ``keys`` with their contributions, and the project's epoch and
        generation, in one statement (``terms_of``)."""
        return await self._inner.read_terms(keys)


def _scores(
    held: dict[int, Term | None],
    query: Sequence[int],
    groups: Sequence[Group],
    epoch: int,
    limit: int,
) -> Scored | None:
    """``ranked_scores`` of the terms ``held``, each of ``groups`` merged into one more."""
    return ranked_scores(grouped(held, query, groups) if groups else held, epoch, limit)


def _within(term: Term | None, seqs: np.ndarray[Any, Any]) -> Term | None:
    """``term``'s postings of the chunks ``seqs`` (both ascending), its idf and document
    frequency the project's (as a filtered read leaves them: the term still counts in the
    query's upper bound, which normalises the scores, though none of these chunks holds it)."""
    if term is None:
        return None
    import numpy as np

    at = np.searchsorted(term.seqs, seqs)
    inside = at < term.size
    at, wanted = at[inside], seqs[inside]
    found = at[term.seqs[at] == wanted]
    return Term(
        term.seqs[found],
        term.tfs[found],
        term.lens[found],
        term.idf,
        term.avg,
        term.df,
        term.n_docs,
    )
