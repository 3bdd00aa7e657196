"""bench.prf: round seven's pseudo-relevance feedback (bench/README.md) is today's search
without expansion terms, picks its terms by frequency x idf from the feedback chunks, and
scores them at their weight."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench import lexical_fields
from bench import prf_lists as prf

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters
from tests.factories import text_chunk

TEXTS = {
    "src/parse.py": "def parse(text):\n    tokens = lexer.tokens(text)\n    return tree(tokens)",
    "src/lexer.py": "class Lexer:\n    def tokens(self, text): return text.split()",
    "src/tree.py": "def tree(tokens):\n    return node(tokens)",
    "src/other.py": "def unrelated():\n    return 42",
    "src/more.py": "def unrelated_too():\n    return 43",
}
QUERIES = ("parse the text", "syntax tree")


def recording() -> dict[str, Any]:
    """A recording of ``QUERIES``: lexical lists as today's search gives them, each question's
    vector, and its semantic list (every chunk, in path order, for the test's purpose)."""
    chunks = [text_chunk(p, t) for p, t in TEXTS.items()]
    keys: dict[Any, Any] = {
        (tuple(lexical.query_terms(q)), SearchFilters()): ([], 0) for q in QUERIES
    }
    data = lexical_fields.rebuild({"chunks": chunks, "lexical": keys}, lexical.FIELDS)
    vectors = {q: [float(i + 1), 0.0, 1.0] for i, q in enumerate(QUERIES)}
    semantic = sorted(chunks, key=lambda c: c.file_path, reverse=True)
    data["vector"] = {
        (tuple(v), SearchFilters()): ([ScoredChunk(c, 0.5) for c in semantic], 5)
        for v in vectors.values()
    }
    return {**data, "vectors": vectors, "queries": [(q, "", 0, 0) for q in QUERIES]}


def lists(data: dict[str, Any]) -> dict[Any, list[tuple[str, float]]]:
    return {k: [(h.chunk.id, h.score) for h in hits] for k, (hits, _) in data["lexical"].items()}


@pytest.mark.parametrize("name", ["lex:3:5:0", "sem:3:0:0.5", "none"])
def test_no_expansion_is_todays_search(name: str) -> None:
    data = recording()
    index = prf.Index(data)
    assert prf.rebuild(data, prf.Feedback.parse(name), index) is data
    for key in data["lexical"]:
        raw, bound = index.search(key[0], [], 0.0)
        hits, _ = lexical_fields.ranked(raw, bound, index.by_id, key[1])
        assert [(h.chunk.id, h.score) for h in hits] == lists(data)[key]


def test_expansion_terms_weigh_frequency_times_idf_and_leave_the_question_out() -> None:
    data = recording()
    index = prf.Index(data)
    feedback = [index.by_id["src/parse.py"], index.by_id["src/tree.py"]]
    terms = ("parse", "text")
    weight: dict[str, float] = {}
    for c in feedback:
        for t, tf in lexical.document_terms(c.content, c.file_path, c.symbol).items():
            if t not in terms:
                weight[t] = weight.get(t, 0.0) + tf * lexical.idf(5, len(index.postings[t]))
    expected = sorted(weight, key=lambda t: (-weight[t], t))[:3]
    got = index.expansion(terms, feedback, 3)
    assert got == expected
    assert not set(got) & set(terms)
    # `tree` (twice in tree.py's path), then `token` (the analyser's stem of `tokens`: in
    # three files of five, four times in these two).
    assert got[:2] == ["tree", "token"]


def test_an_expansion_term_counts_at_its_weight() -> None:
    data = recording()
    index = prf.Index(data)
    raw0, bound0 = index.search(("tree",), [], 0.0)
    raw, bound = index.search(("tree",), ["lexer"], 0.25)
    lexer = index.postings["lexer"]
    assert set(raw) == set(raw0) | set(lexer)  # a chunk with only `lexer` now matches
    for cid, tf in lexer.items():
        extra = lexical.term_score(tf, index.doc_len[cid], index.avg, index.idf["lexer"] * 0.25)
        assert raw[cid] == pytest.approx(raw0.get(cid, 0.0) + extra)
    assert bound == pytest.approx(bound0 + lexical.upper_bound([index.idf["lexer"] * 0.25]))
    # The question's bound alone ("q"): a chunk matching only the question scores as today.
    assert index.search(("tree",), ["lexer"], 0.25, "q")[1] == pytest.approx(bound0)


def test_feedback_comes_from_the_named_list() -> None:
    data = recording()
    index = prf.Index(data)
    key = next(iter(data["lexical"]))
    lexical_top = [h.chunk.id for h in data["lexical"][key][0][:2]]
    semantic_top = [h.chunk.id for h in data["vector"][index.semantic[key]][0][:2]]
    assert lexical_top != semantic_top
    got = prf.feedback_chunks(data, index, key, prf.Feedback.parse("lex:2:5:0.1"))
    assert [c.id for c in got] == lexical_top
    got = prf.feedback_chunks(data, index, key, prf.Feedback.parse("sem:2:5:0.1"))
    assert [c.id for c in got] == semantic_top


def unit(v: Any) -> Any:
    return np.asarray(v) / np.linalg.norm(v)


def test_rocchio_moves_the_query_vector_towards_the_lexical_top() -> None:
    data = recording()
    rng = np.random.default_rng(0)
    vectors = {c.content_hash: rng.normal(size=3).astype(np.float32) for c in data["chunks"]}
    index = prf.Index(data, vectors)
    same = prf.rebuild(data, prf.Feedback.parse("roc:2:0"), index)
    assert same["vector"] == data["vector"]
    moved = prf.rebuild(data, prf.Feedback.parse("roc:2:1"), index)
    for key, (hits, _) in moved["vector"].items():
        top = data["lexical"][index.lexical_of[key]][0][:2]
        q = unit(key[0]) + np.mean([unit(vectors[h.chunk.content_hash]) for h in top], axis=0)
        cosines = {c.id: float(unit(vectors[c.content_hash]) @ unit(q)) for c in data["chunks"]}
        assert [h.chunk.id for h in hits] == sorted(cosines, key=lambda c: -cosines[c])
        assert [h.score for h in hits] == pytest.approx(sorted(cosines.values(), reverse=True))


def test_a_feedback_name_is_checked() -> None:
    assert prf.Feedback.parse("lex:5:10:0.2:q") == prf.Feedback("lex", 5, 10, 0.2, "q")
    assert prf.Feedback.parse("roc:3:0.5").name == "roc:3:0.5"
    with pytest.raises(SystemExit, match=r"lex\|sem:K:M:W"):
        prf.Feedback.parse("dense:5:10:0.2")
