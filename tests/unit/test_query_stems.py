"""bench.query_stems: the query-side stems simulation of bench/README.md (round six) is
today's search at weight 0, round five's stem field above it, and finds other forms."""

from __future__ import annotations

from typing import Any

import pytest
from bench import lexical_fields, lexical_stems, query_stems

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import SearchFilters
from tests.factories import text_chunk

TEXTS = {
    "src/parse.py": "def parse(text):\n    return parser.parsing(text)",
    "src/parser.py": "class Parser:\n    def parsed(self): return self.tokens",
    "src/handle.py": "def handle(request):\n    handler.handled(request)",
    "src/token.py": "def tokens(text):\n    return text.split()",
    "src/other.py": "def unrelated():\n    return 42",
}


def recording(*queries: str) -> dict[str, Any]:
    """A recording of ``queries``' lexical lists under today's analysis (the lists as
    ``lexical_fields.rebuild`` gives them, which ``--check`` holds to the recorded ones)."""
    chunks = [text_chunk(p, t) for p, t in TEXTS.items()]
    keys: dict[Any, Any] = {
        (tuple(lexical.query_terms(q)), SearchFilters()): ([], 0) for q in queries
    }
    data = {"chunks": chunks, "lexical": keys}
    return lexical_fields.rebuild(data, lexical.FIELDS)


def lists(data: dict[str, Any]) -> dict[Any, list[tuple[str, float]]]:
    return {k: [(h.chunk.id, h.score) for h in hits] for k, (hits, _) in data["lexical"].items()}


QUERIES = ("parsing the tokens", "handler", "parser handled", "unrelated")


@pytest.mark.parametrize("stemmer", ["light", "light+"])
def test_weight_zero_is_todays_search(stemmer: str) -> None:
    data = recording(*QUERIES)
    assert lists(query_stems.rebuild(data, query_stems.QueryStems(stemmer, 0.0))) == lists(data)


@pytest.mark.parametrize("weight", [0.5, 1.0, 1.5])
def test_it_equals_round_fives_stem_field(weight: float) -> None:
    data = recording(*QUERIES)
    ours = query_stems.rebuild(data, query_stems.QueryStems("light", weight))
    field = lexical_stems.rebuild(data, lexical_stems.Analysis("light", "extra", weight))
    assert lists(ours) == lists(field)


def found(query: str, weight: float) -> tuple[set[str], int]:
    data = recording(query)
    if weight:
        data = query_stems.rebuild(data, query_stems.QueryStems("light", weight))
    ((hits, total),) = data["lexical"].values()
    return {h.chunk.id for h in hits}, total


def test_another_form_of_a_word_is_found_and_no_match_is_lost() -> None:
    # `handling` is in no chunk; `handle`, `handler`, `handled` are in one.
    assert found("handling", 0) == (set(), 0)
    assert found("handling", 1.0) == ({"src/handle.py"}, 1)
    # `parsed` is in parser.py; `parse`, `parser`, `parsing` in parse.py too.
    assert found("parsed", 0) == ({"src/parser.py"}, 1)
    assert found("parsed", 0.5) == ({"src/parser.py", "src/parse.py"}, 2)
    for query in QUERIES:
        assert found(query, 0)[0] <= found(query, 1.0)[0]


def test_a_stem_of_one_variant_scales_its_term_and_the_bound_alike() -> None:
    # `unrelated` has no other form in the index: asked alone, its chunk scores as today.
    data = recording("unrelated")
    ours = query_stems.rebuild(data, query_stems.QueryStems("light", 1.25))
    assert lists(ours) == lists(data)


@pytest.mark.parametrize("weight", [0.5, 1.25])
def test_summed_df_is_at_least_the_union(weight: float) -> None:
    data = recording(*QUERIES)
    index = query_stems.Index(data, "light")
    for stem, variants in index.variants.items():
        union = index.union(stem)
        assert len(union) <= index.df(stem, union, "sum") <= index.n
        if len(variants) == 1:
            assert index.df(stem, union, "sum") == len(union)
    assert query_stems.rebuild(data, query_stems.QueryStems("light", weight, "sum"))["lexical"]


async def test_written_forms_rank_as_the_product_store_does() -> None:
    """``genN`` (round nine) is what the product asks for: the simulation's lists equal the
    memory store's searched with ``core.stems`` groups at the same weight, df summed."""
    from codebase_mcp_search.adapters.memory import InMemoryChunkStore
    from codebase_mcp_search.core import stems
    from codebase_mcp_search.core.models import StemGroup
    from tests.factories import file_batch, repo

    files = [file_batch("r1", p, [t]) for p, t in TEXTS.items()]
    keys: dict[Any, Any] = {
        (tuple(lexical.query_terms(q)), SearchFilters()): ([], 0) for q in QUERIES
    }
    data = {"chunks": [c for f in files for c in f.chunks], "lexical": keys}
    ours = lists(query_stems.rebuild(data, query_stems.QueryStems("gen", 1.25, "sum")))
    store = InMemoryChunkStore()
    await store.save_repository(repo())
    await store.replace_files("r1", files)
    for (terms, flt), hits in ours.items():
        groups = [StemGroup(g, 1.25) for g in stems.groups(terms)]
        got, _ = await store.lexical_search(terms, flt, 50, groups)
        assert [(h.chunk.id, round(h.score, 9)) for h in got] == [
            (cid, round(score, 9)) for cid, score in hits
        ], terms
    assert ours[(("parsing", "token"), SearchFilters())]  # "parsing" finds other forms


def test_abbreviations_join_a_words_group() -> None:
    index = query_stems.Index(recording("config"), "genabbr")
    (key,) = index.keys(("configuration",))
    assert {"configuration", "config", "cfg"} <= set(key.split("\0"))
