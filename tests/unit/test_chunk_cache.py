"""The process's cache of chunks by seq: bounded by text, least recently used out first,
emptied for another schema epoch."""

from __future__ import annotations

from codebase_mcp_search.adapters.postgres.chunk_store.chunk_cache import ChunkCache
from tests.factories import file_batch


def _chunks(n: int, size: int) -> list:  # type: ignore[type-arg]
    pieces = [f"{i:04d}" + "x" * (size - 4) for i in range(n)]
    return list(file_batch("r1", "a.py", pieces).chunks)


def test_holds_chunks_until_their_text_passes_the_bound() -> None:
    cache = ChunkCache(max_chars=300).at(1)
    chunks = _chunks(5, 100)
    for seq, c in enumerate(chunks[:3]):
        cache.add(seq, c)
    assert cache.held([0, 1, 2, 9]) == {0: chunks[0], 1: chunks[1], 2: chunks[2]}
    assert cache.held([0]) == {0: chunks[0]}  # 0 is now the most recently used
    cache.add(3, chunks[3])  # over 300 characters: the least recently used (1) goes
    assert set(cache.held([0, 1, 2, 3])) == {0, 2, 3} and len(cache) == 3
    cache.add(3, chunks[4])  # a seq's chunk never changes: the first one stays
    assert cache.held([3]) == {3: chunks[3]}


def test_another_epoch_empties_the_cache() -> None:
    cache = ChunkCache(max_chars=10_000)
    chunks = _chunks(2, 50)
    cache.at(1).add(7, chunks[0])
    assert cache.at(1).held([7]) == {7: chunks[0]}
    assert cache.at(2).held([7]) == {} and len(cache) == 0
    cache.add(7, chunks[1])
    assert cache.at(2).held([7]) == {7: chunks[1]}


def test_a_chunk_larger_than_the_bound_is_not_kept() -> None:
    cache = ChunkCache(max_chars=50).at(1)
    cache.add(1, _chunks(1, 80)[0])
    assert cache.held([1]) == {} and len(cache) == 0


def test_context_lines_are_kept_with_their_chunk_object() -> None:
    cache = ChunkCache(max_chars=400).at(1)
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
    assert cache.held([1]) == {} and cache.context(a) is None
    assert cache.context(c) == ("x" * 100, "y" * 100)


def test_rows_read_for_another_epoch_are_not_held() -> None:
    cache = ChunkCache(max_chars=10_000).at(1)
    chunk = _chunks(1, 50)[0]
    row = {**chunk.model_dump(), "seq": 5}
    # Read for epoch 1, but the cache moved on to epoch 2 meanwhile: returned, not held.
    cache.at(2)
    assert cache.add_rows([row], 1) == {5: chunk}
    assert cache.held([5]) == {}
    assert cache.add_rows([row], 2) == {5: chunk}
    assert cache.held([5]) == {5: chunk}
