"""bench.model_swap: a recording's semantic lists ranked by another model's vectors are what
bench/README.md (round thirteen) says: the recorded lists back at mix 0, the other model's
cosines at mix 1, their mean between, at the recorded depth and filters, keyed so the replay's
embedder finds them."""

from __future__ import annotations

import numpy as np
from bench import context_text, model_swap

from codebase_mcp_search.core.models import ScoredChunk, SearchFilters
from tests.factories import text_chunk


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


CHUNKS = [text_chunk(p, p) for p in ("a.py", "b.py", "src/c.py", "src/d.py")]
WEIGHTS = (0.0, 0.5, 1.0, 2.0)
# The recorded model puts a first, then b, c, d; the other model reverses it.
RECORDED = {
    context_text.key("plain", c): unit(1.0, w) for c, w in zip(CHUNKS, WEIGHTS, strict=True)
}
OTHER = {c.content_hash: unit(w, 1.0, 0.0) for c, w in zip(CHUNKS, WEIGHTS, strict=True)}
QUESTION_RECORDED = unit(1.0, 0.0)
QUESTION_OTHER = unit(1.0, 0.0, 0.0)


def recording(depth: int, filters: SearchFilters) -> dict:
    q = tuple(float(x) for x in QUESTION_RECORDED)
    scores = np.stack([RECORDED[context_text.key("plain", c)] for c in CHUNKS]) @ np.asarray(q)
    order = [i for i in np.argsort(-scores) if filters.matches(CHUNKS[i])]
    hits = [ScoredChunk.of(CHUNKS[i], float(scores[i])) for i in order[:depth]]
    return {
        "chunks": CHUNKS,
        "vectors": {"where is d": list(q)},
        "vector": {(q, filters): (hits, len(order))},
    }


def lists(data: dict) -> list[tuple[list[str], int]]:
    return [([h.chunk.id for h in hits], total) for hits, total in data["vector"].values()]


def rewrite(data: dict, mix: float) -> dict:
    return model_swap.rewrite_one(data, OTHER, {"where is d": QUESTION_OTHER}, RECORDED, mix)


def test_mix_zero_gives_the_recorded_lists_back() -> None:
    for filters in (SearchFilters(), SearchFilters(directory="src")):
        data = recording(3, filters)
        assert lists(rewrite(data, 0.0)) == lists(data)


def test_mix_one_ranks_by_the_other_model_at_the_recorded_depth_and_filters() -> None:
    data = recording(3, SearchFilters())
    assert lists(rewrite(data, 1.0)) == [(["src/d.py", "src/c.py", "b.py"], 4)]
    data = recording(1, SearchFilters(directory="src"))
    assert lists(rewrite(data, 1.0)) == [(["src/d.py"], 2)]


def test_the_mix_is_the_mean_of_the_two_cosines() -> None:
    new = rewrite(recording(4, SearchFilters()), 0.5)
    [(hits, _)] = new["vector"].values()
    for h in hits:
        mine = float(RECORDED[context_text.key("plain", h.chunk)] @ QUESTION_RECORDED)
        other = float(OTHER[h.chunk.content_hash] @ QUESTION_OTHER)
        assert abs(h.score - (mine + other) / 2) < 1e-6


def test_lists_are_keyed_by_the_vector_the_replay_returns_for_the_question() -> None:
    new = rewrite(recording(2, SearchFilters()), 1.0)
    [(vector, _)] = new["vector"]
    assert vector == tuple(new["vectors"]["where is d"])
    assert np.allclose(vector, QUESTION_OTHER)
