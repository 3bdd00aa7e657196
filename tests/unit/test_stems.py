"""A query word's other forms (``core.stems``) and lexical search with them (``SearchService``
in lexical mode, over the memory store)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.core import lexical, stems
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import SearchFilters, SearchMode, SearchQuery, StemGroup
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import SearchService
from tests.factories import file_batch, repo

NO_FILTER = SearchFilters()
_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=14)


@pytest.mark.parametrize(
    ("term", "forms"),
    [
        ("parsing", {"parse", "parsed"}),
        ("configuration", {"configure", "configured", "configuring"}),
        ("name", {"named", "naming"}),
        ("run", {"running", "run"}),
        ("redirect", {"redirected", "redirection", "redirecting"}),
        ("happy", {"happiness"}),
        ("iterate", {"iterating", "iterated", "iterator", "iterative"}),
    ],
)
def test_a_words_group_holds_its_common_forms(term: str, forms: set[str]) -> None:
    found = stems.variants(term)
    assert found[0] == term
    assert forms <= set(found)


@pytest.mark.parametrize("term", ["http2", "id", "go", "v8"])
def test_a_term_without_a_stem_of_its_own_is_its_group_alone(term: str) -> None:
    assert stems.variants(term) == (term,)


@settings(max_examples=300, deadline=None)
@given(_words)
def test_every_form_shares_the_stem_and_is_a_term_the_index_stores(word: str) -> None:
    terms = lexical.analyse(word)
    if len(terms) != 1:
        return  # a stop word, or a word the analyser splits
    (term,) = terms
    found = stems.variants(term)
    assert found[0] == term and len(found) == len(set(found)) <= stems.MAX_VARIANTS
    for form in found[1:]:
        assert stems.stem(form) == stems.stem(term)
        assert lexical.analyse(form) == [form]


@settings(max_examples=200, deadline=None)
@given(st.lists(_words, min_size=1, max_size=6))
def test_a_querys_words_of_one_stem_ask_one_group(words: list[str]) -> None:
    terms = lexical.query_terms(" ".join(words))
    groups = stems.groups(terms)
    assert len(groups) == len({stems.stem(t) for t in terms})
    for term in terms:
        (mine,) = [g for g in groups if term in g]
        assert set(stems.variants(term)) <= set(mine)


CODE = {
    "pkg/parser.py": ["def parse(text):\n    return text.split()"],
    "pkg/loader.py": ["def load_file(path):\n    return open(path).read()"],
    "pkg/runner.py": ["def run_all(jobs):\n    for job in jobs:\n        job()"],
}


async def _service(weight: float | None = None) -> SearchService:
    store = InMemoryChunkStore()
    await store.save_repository(repo())
    await store.replace_files("r1", [file_batch("r1", p, c) for p, c in CODE.items()])
    if weight is None:
        return SearchService(store, None)
    return SearchService(store, None, stem_weight=weight)


async def test_lexical_mode_finds_another_form_of_a_word() -> None:
    service = await _service()
    found = await service.search(SearchQuery.build("parsing text", mode="lexical"))
    assert found.hits[0].file_path == "pkg/parser.py"
    assert found.mode is SearchMode.LEXICAL


async def test_a_weight_of_zero_asks_for_no_group() -> None:
    service = await _service(0.0)
    found = await service.search(SearchQuery.build("running loaded", mode="lexical"))
    assert found.hits == [] and found.total_count == 0
    stemmed = await (await _service()).search(SearchQuery.build("running loaded", mode="lexical"))
    assert {h.file_path for h in stemmed.hits} == {"pkg/runner.py", "pkg/loader.py"}


@pytest.mark.parametrize("ranking", [True, False])
async def test_with_no_vectors_hybrid_ranks_as_lexical_with_its_groups(ranking: bool) -> None:
    store = InMemoryChunkStore()
    await store.save_repository(repo())
    await store.replace_files("r1", [file_batch("r1", p, c) for p, c in CODE.items()])
    service = SearchService(store, None, ranking=RankingConfig(enabled=ranking))
    lexical_result = await service.search(SearchQuery.build("parsing runs", mode="lexical"))
    hybrid = await service.search(SearchQuery.build("parsing runs", mode="hybrid"))
    assert hybrid.mode is SearchMode.LEXICAL
    assert hybrid.hits == lexical_result.hits and hybrid.hits
    assert hybrid.total_count == lexical_result.total_count == 2


def test_a_negative_weight_is_refused_by_name() -> None:
    with pytest.raises(ValidationFailed, match="stem_weight"):
        SearchService(InMemoryChunkStore(), None, stem_weight=-1.0)


FORMS = ["parse", "parsed", "parsing", "load", "loaded", "loading", "run", "running", "cache"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(FORMS), min_size=1, max_size=5), min_size=1, max_size=8),
    st.lists(st.sampled_from(FORMS), min_size=1, max_size=3),
    st.sampled_from([0.5, 1.25, 3.0]),
)
async def test_groups_only_add_matches_and_keep_scores_in_bounds(
    pieces: list[list[str]], words: list[str], weight: float
) -> None:
    store = InMemoryChunkStore()
    await store.save_repository(repo())
    await store.replace_files(
        "r1", [file_batch("r1", f"f{i}.txt", [" ".join(p)]) for i, p in enumerate(pieces)]
    )
    terms = lexical.query_terms(" ".join(words))
    groups = [StemGroup(forms, weight) for forms in stems.groups(terms)]
    plain, n_plain = await store.lexical_search(terms, NO_FILTER, 50)
    grouped, n_grouped = await store.lexical_search(terms, NO_FILTER, 50, groups)
    assert {h.chunk.id for h in plain} <= {h.chunk.id for h in grouped}
    assert n_plain <= n_grouped == len(grouped)
    assert all(0.0 < h.score <= 1.0 for h in grouped)
    # A chunk holding a form of every query word is found.
    for i, piece in enumerate(pieces):
        if all(any(stems.stem(f) == stems.stem(t) for f in piece) for t in terms):
            assert any(h.chunk.file_path == f"f{i}.txt" for h in grouped)
