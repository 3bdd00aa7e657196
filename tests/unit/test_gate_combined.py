"""Round seven's two findings together (bench/README.md): feedback expands the lexical lists of
mechanism questions only, and the combined file prior multiplies its parts' factors."""

from __future__ import annotations

from typing import Any

import pytest
from bench import gate_prf, gate_vector, lexical_fields
from bench.prf_lists import Feedback, Index

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import ScoredChunk, SearchFilters
from tests.factories import text_chunk
from tests.unit.test_prf import TEXTS

MECHANISM = "how does the parser build the syntax tree"
DESCRIPTION = "parse the text into tokens"


def recording() -> dict[str, Any]:
    chunks = [text_chunk(p, t) for p, t in TEXTS.items()]
    queries = (MECHANISM, DESCRIPTION)
    keys: dict[Any, Any] = {
        (tuple(lexical.query_terms(q)), SearchFilters()): ([], 0) for q in queries
    }
    data = lexical_fields.rebuild({"chunks": chunks, "lexical": keys}, lexical.FIELDS)
    vectors = {q: [float(i + 1), 0.0, 1.0] for i, q in enumerate(queries)}
    data["vector"] = {
        (tuple(v), SearchFilters()): ([ScoredChunk(c, 0.5) for c in chunks], 5)
        for v in vectors.values()
    }
    return {**data, "vectors": vectors, "queries": [(q, "", 0, 0) for q in queries]}


def test_only_a_mechanism_questions_list_is_expanded() -> None:
    data = recording()
    index = Index(data)
    fb = Feedback.parse("lex:3:5:1.0")
    out = gate_prf.gated(data, fb, index)
    mechanism = (tuple(lexical.query_terms(MECHANISM)), SearchFilters())
    description = (tuple(lexical.query_terms(DESCRIPTION)), SearchFilters())
    assert out["lexical"][description] is data["lexical"][description]
    expanded = [(h.chunk.id, h.score) for h in out["lexical"][mechanism][0]]
    today = [(h.chunk.id, h.score) for h in data["lexical"][mechanism][0]]
    assert expanded != today
    assert gate_prf.gated(data, Feedback.parse("none"), index) is data


def test_the_combined_prior_multiplies_its_parts() -> None:
    a = lambda chunks, profile: {("r", "x"): 0.5, ("r", "y"): 0.8}
    b = lambda chunks, profile: {("r", "x"): 0.5}
    assert gate_vector.product(a, b)([], None) == pytest.approx({("r", "x"): 0.25, ("r", "y"): 0.8})
    assert gate_vector.product()([], None) == {}
