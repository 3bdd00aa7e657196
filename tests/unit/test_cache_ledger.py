"""One budget for every project's caches in a process: the bytes accounted never pass it, they
are the bytes of what the caches hold, the least recently used cache (across projects) gives
entries back first, and releasing a project empties its caches."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.postgres.cache_ledger import CacheLedger, Slot
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import (
    ChunkCache,
    chunk_bytes,
    context_bytes,
)
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import ChunkReader
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import (
    PostingsCache,
    State,
    term_bytes,
)
from codebase_mcp_search.adapters.postgres.chunk_store.terms import Term
from codebase_mcp_search.core.models import Chunk
from tests.factories import file_batch

PROJECTS = ("a", "b", "c")
EPOCH = 1
STATE = State((1, 0, 0), epoch=EPOCH, generation=1)


def _chunk(seq: int, size: int) -> Chunk:
    return file_batch("r1", f"f{seq}.py", [f"{seq:06d}" + "x" * size]).chunks[0]


def _term(n: int) -> Term:
    return Term(np.arange(n, dtype=np.int64), np.ones(n), np.ones(n), 1.0, 1.0, n, 10 * n)


class Process:
    """Each project's chunk and postings caches over one ledger (caches' own bounds far)."""

    def __init__(self, budget: int) -> None:
        self.ledger = CacheLedger(budget)
        self.chunks = {p: ChunkCache(ChunkReader(), 10**12, self.ledger, p) for p in PROJECTS}
        self.postings = {p: PostingsCache(10**12, self.ledger, p) for p in PROJECTS}
        for cache in self.chunks.values():
            cache.held([], EPOCH)

    def held_bytes(self, project: str) -> int:
        """The bytes of what the project's caches hold, counted from their entries."""
        chunks, postings = self.chunks[project], self.postings[project]
        seqs = list(chunks._held)
        held = chunks.held(seqs, EPOCH)
        total = sum(chunk_bytes(c) for c in held.values())
        total += sum(context_bytes(chunks._contexts[s]) for s in seqs if s in chunks._contexts)
        total += sum(term_bytes(t) for t in postings._terms.values())
        return total

    def check(self) -> None:
        assert 0 <= self.ledger.used <= self.ledger.budget
        by_project = self.ledger.by_project()
        for p in PROJECTS:
            assert by_project[p] == self.held_bytes(p), p
        assert sum(by_project.values()) == self.ledger.used


operations = st.lists(
    st.tuples(
        st.sampled_from(["chunk", "context", "term", "read", "release"]),
        st.sampled_from(PROJECTS),
        st.integers(0, 40),  # seq or term key
        st.integers(0, 3_000),  # characters or postings
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(budget=st.integers(0, 60_000), ops=operations)
def test_the_bytes_accounted_never_pass_the_budget_and_are_those_held(
    budget: int, ops: list[tuple[str, str, int, int]]
) -> None:
    process = Process(budget)
    for op, project, key, size in ops:
        chunks = process.chunks[project]
        if op == "chunk":
            chunks.add(key, _chunk(key, size))
        elif op == "context":
            held = chunks.held([key], EPOCH)
            if key in held:
                chunks.keep_context(held[key], ("b" * size, "a"))
        elif op == "term":
            process.postings[project].add(STATE, {key: _term(size) if size % 5 else None})
        elif op == "read":
            chunks.held([key], EPOCH)
            process.postings[project].held(STATE.token, [key])
        else:
            process.ledger.release(project)
            assert process.ledger.by_project()[project] == 0
            assert len(chunks) == 0
        process.check()


def test_the_least_recently_used_project_gives_bytes_back_first() -> None:
    one = chunk_bytes(_chunk(1, 1_000))
    process = Process(budget=3 * one)
    a, b = process.chunks["a"], process.chunks["b"]
    a.add(1, _chunk(1, 1_000))
    a.add(2, _chunk(2, 1_000))
    b.add(3, _chunk(3, 1_000))
    a.held([1], EPOCH)  # a used after b: b is now the least recently used
    process.chunks["c"].add(4, _chunk(4, 1_000))
    assert set(a.held([1, 2], EPOCH)) == {1, 2}
    assert b.held([3], EPOCH) == {}
    process.check()


def test_an_entry_larger_than_the_budget_is_not_kept() -> None:
    process = Process(budget=10_000)
    process.chunks["a"].add(1, _chunk(1, 500))
    process.chunks["b"].add(2, _chunk(2, 20_000))
    process.postings["b"].add(STATE, {1: _term(1_000)})  # 24,000 bytes of postings
    assert set(process.ledger.by_project().values()) == {0, chunk_bytes(_chunk(1, 500))}
    assert process.postings["b"].held(STATE.token, [1]) == {}
    process.check()


def test_a_term_cut_from_a_larger_block_owns_its_arrays() -> None:
    block = np.arange(10_000, dtype=np.int64)
    view = Term(block[10:20], np.ones(10_000)[10:20], np.ones(10_000)[10:20], 1.0, 1.0, 10, 100)
    process = Process(budget=10**6)
    process.postings["a"].add(STATE, {1: view})
    (kept,) = process.postings["a"].held(STATE.token, [1]).values()
    assert kept is not None
    assert kept.seqs.base is None and kept.tfs.base is None and kept.lens.base is None
    assert process.ledger.used == term_bytes(kept) < block.nbytes


def test_a_cache_garbage_collected_leaves_the_ledger_with_its_bytes() -> None:
    process = Process(budget=10**6)
    process.chunks["a"].add(1, _chunk(1, 500))
    process.chunks["b"].add(2, _chunk(2, 500))
    del process.chunks["a"]
    gc.collect()
    assert process.ledger.used == chunk_bytes(_chunk(2, 500))
    assert [a.project for a in process.ledger.accounts()].count("a") == 1  # its postings


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        CacheLedger(-1)


def test_a_slot_keeps_one_value_and_gives_it_back_under_pressure() -> None:
    ledger = CacheLedger(1_000)
    slot: Slot[str] = Slot(ledger, "a", "one")
    slot.keep("first", 400)
    slot.keep("second", 600)
    assert (slot.value, ledger.used) == ("second", 600)
    # Larger than the whole budget: not kept, and the value kept stays.
    slot.keep("huge", 1_001)
    assert (slot.value, ledger.used) == ("second", 600)
    # Another cache's charge past the budget takes the least recently used slot's value.
    other: Slot[str] = Slot(ledger, "b", "two")
    other.keep("third", 500)
    assert (slot.value, other.value, ledger.used) == (None, "third", 500)
    ledger.release("b")
    assert (other.value, ledger.used) == (None, 0)
