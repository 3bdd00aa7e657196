"""The bytes every project's caches hold in this process, against one budget (``CacheLedger``).

Each cache of a ``PgChunkStore`` (``chunk_store.caches``) opens an ``Account`` here, under its
project, and charges it the bytes of each entry it keeps and credits it those of each entry it
lets go. Whenever a charge takes the total past the budget, the ledger takes entries back from
the account used least recently, across every project of the process, one oldest entry at a
time (each cache evicts its own least recently used entry), until the total is within the
budget again; a cache used by the search under way is thus the last to lose entries. An entry
larger than the whole budget is never kept (``fits``). Dropping a project (``release``) empties
its caches at once.

Sizes are estimates of what an entry keeps alive, said where each is computed: ``nbytes`` of a
numpy array, ``sys.getsizeof`` of a string, plus a fixed overhead per entry for the objects
and the container slots around them. The process's resident memory also holds what no cache
owns (the interpreter, the libraries, a search's working arrays): the budget bounds the caches,
not the process.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable
from typing import Final

MIB: Final = 1 << 20


class Account:
    """One cache's bytes in a ``CacheLedger``. ``evict`` lets go of the cache's oldest entry
    (crediting its bytes here) and returns False when it holds none; ``clear`` empties it."""

    __slots__ = ("_clear", "_evict", "_ledger", "bytes", "name", "project")

    def __init__(
        self,
        ledger: CacheLedger,
        project: str,
        name: str,
        evict: Callable[[], bool],
        clear: Callable[[], None],
    ) -> None:
        self._ledger = ledger
        self.project = project
        self.name = name
        self._evict = evict
        self._clear = clear
        self.bytes = 0

    def fits(self, nbytes: int) -> bool:
        """Whether an entry of ``nbytes`` may be kept at all (no larger than the budget)."""
        return nbytes <= self._ledger.budget

    def charge(self, nbytes: int) -> None:
        """The cache keeps ``nbytes`` more: entries of the least recently used accounts (this
        one last) go until the total is within the budget."""
        self.bytes += nbytes
        self._ledger._charged(self, nbytes)

    def credit(self, nbytes: int) -> None:
        """The cache let go of ``nbytes``."""
        self.bytes -= nbytes
        self._ledger.used -= nbytes

    def touch(self) -> None:
        """The cache answered from what it holds: it is the most recently used."""
        self._ledger._touched(self)

    def evict(self) -> bool:
        return self._evict()

    def clear(self) -> None:
        self._clear()


class CacheLedger:
    """The process's caches against ``budget`` bytes (see the module docstring)."""

    def __init__(self, budget: int) -> None:
        if budget < 0:
            raise ValueError(f"a cache budget is 0 or more bytes, not {budget}")
        self.budget = budget
        self.used = 0
        # Least recently used first.
        self._accounts: collections.OrderedDict[int, Account] = collections.OrderedDict()

    @classmethod
    def of_mib(cls, mib: int) -> CacheLedger:
        return cls(mib * MIB)

    def account(
        self, project: str, name: str, evict: Callable[[], bool], clear: Callable[[], None]
    ) -> Account:
        """A new account for a cache of ``project``."""
        account = Account(self, project, name, evict, clear)
        self._accounts[id(account)] = account
        return account

    def by_project(self) -> dict[str, int]:
        """Bytes held per project."""
        out: dict[str, int] = {}
        for a in self._accounts.values():
            out[a.project] = out.get(a.project, 0) + a.bytes
        return out

    def release(self, project: str) -> None:
        """Empty every cache of ``project`` (dropped, or no longer served)."""
        for account in [a for a in self._accounts.values() if a.project == project]:
            account.clear()

    def _touched(self, account: Account) -> None:
        self._accounts.move_to_end(id(account))

    def _charged(self, account: Account, nbytes: int) -> None:
        self.used += nbytes
        self._accounts.move_to_end(id(account))
        if self.used <= self.budget:
            return
        for victim in list(self._accounts.values()):
            while victim.bytes > 0 and self.used > self.budget:
                if not victim.evict():
                    break
            if self.used <= self.budget:
                return


def unbounded() -> CacheLedger:
    """A ledger of its own for a cache built alone (a test's): only the cache's own bound
    applies."""
    return CacheLedger(sys.maxsize)
