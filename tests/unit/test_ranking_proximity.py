"""Query words found together in a candidate (core.ranking.proximity): the query's adjacent
word pairs, found within a window of a candidate's words or inside one identifier."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import Chunk, ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.ranking.proximity import pairs_found, query_pairs


def chunk(path: str, content: str, line: int = 1) -> Chunk:
    return Chunk(
        id=f"r:{path}:{line}",
        repository_id="r",
        file_path=path,
        language=None,
        symbol=None,
        kind="function",
        start_line=line,
        end_line=line + content.count("\n"),
        content=content,
        content_hash=f"{path}:{line}",
        token_count=len(content.split()),
    )


def test_query_pairs_are_adjacent_words_without_stop_words_or_repeats() -> None:
    assert query_pairs("how the event loop runs") == (("event", "loop"), ("loop", "run"))
    assert query_pairs("QueryBuilder for rate limits") == (
        ("query", "builder"),
        ("builder", "rate"),
        ("rate", "limit"),
    )
    # Each pair once whatever its order; a word beside itself is no pair.
    assert query_pairs("union and discriminated union union") == (("union", "discriminated"),)
    assert query_pairs("python read file") == (("read", "file"),)
    assert query_pairs("Router") == ()


def test_a_pair_is_found_in_an_identifier_or_words_close_by() -> None:
    pairs = query_pairs("event loop")
    for text in ("uv_event_loop_t *l;", "EventLoop loop;", "// the event loop", "loop-event"):
        assert pairs_found(text, pairs, 1) == {("event", "loop")}, text
    assert pairs_found("an event, then much later a loop", pairs, 1) == frozenset()
    assert pairs_found("an event, then much later a loop", pairs, 3) == {("event", "loop")}
    # Inside one identifier only (window 0): not two words of prose.
    assert pairs_found("EventLoop x;", pairs, 0) == {("event", "loop")}
    assert pairs_found("the event loop", pairs, 0) == frozenset()
    # Plural forms are the analyser's: "queries" holds the term "query".
    assert pairs_found("run_queries_builder()", query_pairs("query builder"), 1)


def _reference(content: str, pairs: tuple[tuple[str, str], ...], window: int) -> set[object]:
    """``pairs_found`` without its shortcut: every word's parts, every position compared."""
    words = lexical.word_parts(content)
    if window <= 0:
        joined = {p for w in words for p in itertools.pairwise(w)}
        return {p for p in pairs if p in joined or p[::-1] in joined}
    seq = [p for w in words for p in w]
    at = {t: [i for i, p in enumerate(seq) if p == t] for pair in pairs for t in pair}
    return {(a, b) for a, b in pairs if any(abs(i - j) <= window for i in at[a] for j in at[b])}


_WORDS = st.sampled_from(
    ["event", "loop", "Loop", "EVENT", "queries", "query", "builder", "rate", "limit", "the", "x"]
)
_SEPS = st.sampled_from(["", "_", " ", ".", "-", "\n", " of the ", "()"])
_TEXT = st.lists(st.tuples(_WORDS, _SEPS), max_size=12).map(
    lambda ws: "".join(w + s for w, s in ws)
)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT, st.integers(0, 4))
def test_pairs_found_are_what_comparing_every_position_finds(
    query: str, content: str, window: int
) -> None:
    pairs = query_pairs(query)
    assert set(pairs_found(content, pairs, window)) == _reference(content, pairs, window)


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT, st.integers(0, 4))
def test_a_wider_window_finds_every_pair_a_narrower_one_finds(
    query: str, content: str, window: int
) -> None:
    pairs = query_pairs(query)
    assert pairs_found(content, pairs, window) <= pairs_found(content, pairs, window + 1)
    assert pairs_found(content, pairs, window) <= frozenset(pairs)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_query_pairs_pair_the_query_s_own_terms(text: str) -> None:
    pairs = query_pairs(text)
    terms = set(lexical.analyse(text))
    for a, b in pairs:
        assert a != b and {a, b} <= terms
    assert len({frozenset(p) for p in pairs}) == len(pairs)


_NEAR = "def run(self):\n    # drive the event loop until stopped\n    self.event_loop.run()\n"
_FAR = (
    "def run(self):\n    # an event is queued here\n    self.queue.push()\n"
    "    self.flush()\n    # then the main loop\n    self.main.run()\n"
)


def _ranked(config: RankingConfig, query: str = "how the event loop runs") -> list[str]:
    # The two candidates retrieved alike: only where their words stand tells them apart (the
    # far one first on a tie of path order).
    cands = [ScoredChunk(chunk("a/far.py", _FAR), 0.8), ScoredChunk(chunk("b/near.py", _NEAR), 0.8)]
    return [s.chunk.file_path for s in rerank(cands, analyse_query(query), config)]


def test_words_found_together_rank_first() -> None:
    assert _ranked(RankingConfig(proximity_boost=0.2)) == ["b/near.py", "a/far.py"]
    # Off, the tie falls to path order.
    assert _ranked(RankingConfig(proximity_boost=0.0)) == ["a/far.py", "b/near.py"]


def test_a_name_alone_gains_nothing_from_proximity() -> None:
    # A symbol query is found by its definition, not by its parts' neighbours.
    config = RankingConfig(proximity_boost=0.2)
    assert _ranked(config, "event_loop") == _ranked(
        RankingConfig(proximity_boost=0.0), "event_loop"
    )


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 2.0))
def test_scores_stay_in_unit_range_with_any_boost(a: float, b: float, boost: float) -> None:
    cands = [ScoredChunk(chunk("a/far.py", _FAR), a), ScoredChunk(chunk("b/near.py", _NEAR), b)]
    ranked = rerank(cands, analyse_query("event loop run"), RankingConfig(proximity_boost=boost))
    assert all(0.0 <= s.score <= 1.0 for s in ranked)
    assert [s.score for s in ranked] == sorted((s.score for s in ranked), reverse=True)
