"""The bytes every project's caches hold in this process, against one budget (``CacheLedger``).

Each cache of a ``PgChunkStore`` (``chunk_store.caches``) opens an ``Account`` here, under its
project, and charges it the bytes of each entry it keeps and credits it those of each entry it
lets go. Whenever a charge takes the total past the budget, the ledger takes entries back from
the account used least recently, across every project of the process, one oldest entry at a
time (each cache evicts its own least recently used entry), until the total is within the
budget again; a cache used by the search under way is thus the last to lose entries. An entry
larger than the whole budget is never kept (``fits``). Dropping a project (``release``) empties
its caches at once; a cache that is garbage collected (its store discarded) leaves the ledger
with its bytes.

Sizes are estimates of what an entry keeps alive, said where each is computed: ``nbytes`` of a
numpy array, ``sys.getsizeof`` of a string, plus a fixed overhead per entry for the objects
and the container slots around them. The process's resident memory also holds what no cache
owns (the interpreter, the libraries, a search's working arrays): the budget bounds the caches,
not the process.
"""

from __future__ import annotations

import collections
import itertools
import sys
import weakref
from collections.abc import Callable
from typing import Final, Generic, TypeVar

MIB: Final = 1 << 20

T = TypeVar("T")


class Account:
    """One cache's bytes in a ``CacheLedger``. ``evict`` lets go of the cache's oldest entry
    (crediting its bytes here) and returns False when it holds none; ``clear`` empties it."""

    __slots__ = ("__weakref__", "_clear", "_evict", "_held", "_key", "_ledger", "name", "project")

    def __init__(
        self,
        ledger: CacheLedger,
        key: int,
        project: str,
        name: str,
        evict: Callable[[], bool],
        clear: Callable[[], None],
    ) -> None:
        self._ledger = ledger
        self._key = key
        self.project = project
        self.name = name
        self._evict = evict
        self._clear = clear
        # Shared with the ledger's finalizer of this account: its bytes once it is gone.
        self._held = [0]

    @property
    def bytes(self) -> int:
        return self._held[0]

    def fits(self, nbytes: int) -> bool:
        """Whether an entry of ``nbytes`` may be kept at all (no larger than the budget)."""
        return nbytes <= self._ledger.budget

    def charge(self, nbytes: int) -> None:
        """The cache keeps ``nbytes`` more: entries of the least recently used accounts (this
        one last) go until the total is within the budget."""
        self._held[0] += nbytes
        self._ledger._charged(self._key, nbytes)

    def credit(self, nbytes: int) -> None:
        """The cache let go of ``nbytes``."""
        self._held[0] -= nbytes
        self._ledger.used -= nbytes

    def touch(self) -> None:
        """The cache answered from what it holds: it is the most recently used."""
        self._ledger._accounts.move_to_end(self._key)

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
        # Least recently used first; held weakly: a cache's account lives as long as it does.
        self._accounts: collections.OrderedDict[int, weakref.ref[Account]] = (
            collections.OrderedDict()
        )
        self._keys = itertools.count()

    @classmethod
    def of_mib(cls, mib: int) -> CacheLedger:
        return cls(mib * MIB)

    def account(
        self, project: str, name: str, evict: Callable[[], bool], clear: Callable[[], None]
    ) -> Account:
        """A new account for a cache of ``project``."""
        key = next(self._keys)
        account = Account(self, key, project, name, evict, clear)
        self._accounts[key] = weakref.ref(account)
        weakref.finalize(account, self._gone, key, account._held)
        return account

    def accounts(self) -> list[Account]:
        """The live accounts, least recently used first."""
        return [a for a in (ref() for ref in list(self._accounts.values())) if a is not None]

    def by_project(self) -> dict[str, int]:
        """Bytes held per project."""
        out: dict[str, int] = {}
        for a in self.accounts():
            out[a.project] = out.get(a.project, 0) + a.bytes
        return out

    def release(self, project: str) -> None:
        """Empty every cache of ``project`` (dropped, or no longer served)."""
        for account in self.accounts():
            if account.project == project:
                account.clear()

    def _gone(self, key: int, held: list[int]) -> None:
        self._accounts.pop(key, None)
        self.used -= held[0]

    def _charged(self, key: int, nbytes: int) -> None:
        self.used += nbytes
        self._accounts.move_to_end(key)
        if self.used <= self.budget:
            return
        for victim in self.accounts():
            while victim.bytes > 0 and self.used > self.budget:
                if not victim.evict():
                    break
            if self.used <= self.budget:
                return


def unbounded() -> CacheLedger:
    """A ledger of its own for a cache built alone (a test's): only the cache's own bound
    applies."""
    return CacheLedger(sys.maxsize)


class Slot(Generic[T]):
    """One value kept at a time, its bytes charged to an account of ``ledger`` under
    ``project`` and ``name``: the ledger's eviction, and ``clear``, let it go."""

    def __init__(self, ledger: CacheLedger | None, project: str, name: str) -> None:
        self.value: T | None = None
        self._account = (ledger or unbounded()).account(project, name, self._evict, self.clear)

    def keep(self, value: T, nbytes: int) -> None:
        """Keep ``value`` of ``nbytes`` in place of the one kept; nothing changes when it is
        larger than the whole budget (``Account.fits``)."""
        if not self._account.fits(nbytes):
            return
        self.clear()
        self.value = value
        self._account.charge(nbytes)

    def touch(self) -> None:
        """The value kept answered a read: its cache is the most recently used."""
        self._account.touch()

    def clear(self) -> None:
        self.value = None
        self._account.credit(self._account.bytes)

    def _evict(self) -> bool:
        if self.value is None:
            return False
        self.clear()
        return True
