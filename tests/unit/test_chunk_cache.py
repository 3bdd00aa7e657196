"""The process's cache of chunks by seq: bounded by text, least recently used out first,
emptied for another schema epoch, and in front of its reader for what it does not hold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from codebase_mcp_search.adapters.postgres.chunk_store.chunk_reader import ChunkReader
from codebase_mcp_search.core.models import Chunk
from tests.factories import file_batch


def _chunks(n: int, size: int) -> list[Chunk]:
    pieces = [f"{i:04d}" + "x" * (size - 4) for i in range(n)]
    return list(file_batch("r1", "a.py", pieces).chunks)


def _cache(max_chars: int, epoch: int = 1) -> ChunkCache:
    cache = ChunkCache(ChunkReader(), max_chars=max_chars)
    cache.held([], epoch)
    return cache


def test_holds_chunks_until_their_text_passes_the_bound() -> None:
    cache = _cache(max_chars=300)
    chunks = _chunks(5, 100)
    for seq, c in enumerate(chunks[:3]):
        cache.add(seq, c)
    assert cache.held([0, 1, 2, 9], 1) == {0: chunks[0], 1: chunks[1], 2: chunks[2]}
    assert cache.held([0], 1) == {0: chunks[0]}  # 0 is now the most recently used
    cache.add(3, chunks[3])  # over 300 characters: the least recently used (1) goes
    assert set(cache.held([0, 1, 2, 3], 1)) == {0, 2, 3} and len(cache) == 3
    cache.add(3, chunks[4])  # a seq's chunk never changes: the first one stays
    assert cache.held([3], 1) == {3: chunks[3]}


def test_another_epoch_empties_the_cache() -> None:
    cache = _cache(max_chars=10_000)
    chunks = _chunks(2, 50)
    cache.add(7, chunks[0])
    assert cache.held([7], 1) == {7: chunks[0]}
    assert cache.held([7], 2) == {} and len(cache) == 0
    cache.add(7, chunks[1])
    assert cache.held([7], 2) == {7: chunks[1]}


def test_a_chunk_larger_than_the_bound_is_not_kept() -> None:
    cache = _cache(max_chars=50)
    cache.add(1, _chunks(1, 80)[0])
    assert cache.held([1], 1) == {} and len(cache) == 0


def test_context_lines_are_kept_with_their_chunk_object() -> None:
    cache = _cache(max_chars=400)
    a, b, c = _chunks(3, 100)
    assert cache.add(1, a) is a
    assert cache.add(1, b) is a  # the seq's first chunk stays
    assert cache.context(a) is None
    cache.keep_context(a, ("before a", "after a"))
    assert cache.context(a) == ("before a", "after a")
    # Only the very object held: an equal chunk read elsewhere gets nothing kept.
    twin = a.model_copy()
    cache.keep_context(twin, ("x", "y"))
    assert cache.context(twin) is None and cache.context(a) == ("before a", "after a")
    cache.keep_context(b, ("x", "y"))  # b is held under no seq
    assert cache.context(b) is None
    cache.add(2, b)
    cache.add(3, c)
    # Past 400 characters (300 of text, 16 of context, 200 more): 1 goes with its context.
    cache.keep_context(c, ("x" * 100, "y" * 100))
    assert cache.held([1], 1) == {} and cache.context(a) is None
    assert cache.context(c) == ("x" * 100, "y" * 100)


def test_rows_read_for_another_epoch_are_not_held() -> None:
    cache = _cache(max_chars=10_000)
    chunk = _chunks(1, 50)[0]
    row = {**chunk.model_dump(), "seq": 5}
    # Read for epoch 1, but the cache moved on to epoch 2 meanwhile: returned, not held.
    cache.held([], 2)
    assert cache.decoded([row], 1) == {5: chunk}
    assert cache.held([5], 2) == {}
    assert cache.decoded([row], 2) == {5: chunk}
    assert cache.held([5], 2) == {5: chunk}


class _Reader(ChunkReader):
    """A reader answering from a dict, recording what it was asked for."""

    def __init__(self, chunks: dict[int, Chunk]) -> None:
        self.stored = chunks
        self.asked: list[list[int]] = []
        self.meanwhile: Callable[[], object] = lambda: None

    async def chunks(self, on: Any, seqs: Sequence[int], epoch: int) -> dict[int, Chunk]:
        self.asked.append(list(seqs))
        self.meanwhile()
        return {s: self.stored[s] for s in seqs if s in self.stored}


async def test_only_what_is_not_held_is_read() -> None:
    stored = dict(enumerate(_chunks(4, 50)))
    reader = _Reader(stored)
    cache = ChunkCache(reader, max_chars=10_000)
    on: Any = None  # never opened by this reader
    assert await cache.chunks(on, [0, 1], 1) == {0: stored[0], 1: stored[1]}
    assert await cache.chunks(on, [1, 2, 9], 1) == {1: stored[1], 2: stored[2]}
    assert reader.asked == [[0, 1], [2, 9]]  # 9: its row is gone
    # Another search moves the cache to another epoch while this one reads: what it read is
    # returned, not kept.
    reader.meanwhile = lambda: cache.held([], 2)
    assert await cache.chunks(on, [3], 1) == {3: stored[3]}
    assert len(cache) == 0
