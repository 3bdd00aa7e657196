"""A semantic list whose candidates score too alike to tell apart abstains from hybrid
search, which then ranks as the lexical list does (``core.fusion.abstains``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core.fusion import FusionConfig, abstains, lexical_led
from codebase_mcp_search.core.models import IndexRequest, SearchMode, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, ROOT, TOKENS
from tests.unit.test_fusion import _ranked
from tests.unit.test_partial_vectors import _functions, _indexed, _named_queries

ids = st.lists(st.integers(0, 60), unique=True, max_size=40)
scores = st.lists(st.floats(0.0, 1.0), min_size=40, max_size=40).map(
    lambda s: sorted(s, reverse=True)
)


@given(ids, scores, ids, st.floats(0.0, 1.0), st.integers(1, 60))
def test_the_semantic_list_abstains_only_when_flat_full_and_not_alone(
    sem_ids: list[int], sem_scores: list[float], lex_ids: list[int], spread: float, least: int
) -> None:
    semantic = _ranked(sem_ids, sem_scores)
    lexical = _ranked(lex_ids, sem_scores)
    config = FusionConfig(semantic_abstain_spread=spread, min_candidates=least)
    flat = (
        bool(semantic)
        and max(sem_scores[: len(semantic)]) - min(sem_scores[: len(semantic)]) < spread
    )
    expected = flat and bool(lexical) and len(semantic) >= least
    assert abstains(semantic, lexical, config) is expected
    # Off (0): never, however flat the list.
    off = config.model_copy(update={"semantic_abstain_spread": 0.0})
    assert not abstains(semantic, lexical, off)


@given(ids, scores, ids, scores)
def test_when_it_abstains_the_lexical_list_leads_as_it_is(
    sem_ids: list[int], sem_scores: list[float], lex_ids: list[int], lex_scores: list[float]
) -> None:
    semantic, lexical = _ranked(sem_ids, sem_scores), _ranked(lex_ids, lex_scores)
    led = lexical_led(semantic, lexical)
    # The lexical list first, unchanged; then each chunk only the semantic list holds, in its
    # order, scored 0; every candidate once.
    assert led[: len(lexical)] == lexical
    lexical_ids = {sc.chunk.id for sc in lexical}
    tail = [sc for sc in semantic if sc.chunk.id not in lexical_ids]
    assert [sc.chunk.id for sc in led[len(lexical) :]] == [sc.chunk.id for sc in tail]
    assert all(sc.score == 0.0 for sc in led[len(lexical) :])
    assert len({sc.chunk.id for sc in led}) == len(led)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_functions, _named_queries, st.booleans())
async def test_a_hybrid_search_whose_semantic_list_abstains_ranks_as_a_lexical_one(
    functions: list[tuple[str, str, str]], text: str, ranking: bool
) -> None:
    store, embedder = await _indexed(functions, 1.0, 0)
    # Every list abstains (no spread reaches 1.0 over one candidate or more).
    fusion = FusionConfig(semantic_abstain_spread=1.0, min_candidates=1)
    service = SearchService(store, embedder, fusion=fusion, ranking=RankingConfig(enabled=ranking))
    lexical = await service.search(SearchQuery.build(text, mode="lexical", limit=50))
    hybrid = await service.search(SearchQuery.build(text, mode="hybrid", limit=50))
    assert hybrid.mode is SearchMode.HYBRID
    if not ranking:
        # The lexical hits first, as lexical search ranks them; then what only the model found.
        assert hybrid.hits[: len(lexical.hits)] == lexical.hits
    else:
        assert {h.chunk_id for h in lexical.hits} <= {h.chunk_id for h in hybrid.hits}
    if not lexical.hits:
        # Nothing found by its letters: the semantic list does not abstain, it is all there is.
        default = SearchService(store, embedder, ranking=RankingConfig(enabled=ranking))
        alone = await default.search(SearchQuery.build(text, mode="hybrid", limit=50))
        assert hybrid.hits == alone.hits


async def test_an_abstaining_hybrid_search_counts_a_words_other_forms_as_lexical_does() -> None:
    # The second file holds "parse" mostly in other forms, which lexical mode counts through
    # the word's stem group (core.stems) and a plain lexical list does not.
    files = {
        "a.py": b"def parse_header(x):\n    return x\n",
        "b.py": b"def parsed_values(x):\n    # parsing what was parsed: parses\n    return x\n",
        "c.py": b"def render_page(x):\n    # parse the parse tree\n    return x\n",
    }
    store, embedder = InMemoryChunkStore(), HashingEmbedder(64)
    indexing = IndexingService(
        store, InMemorySourceTree({ROOT: files}), CHUNKER, TOKENS, embedder, chunking_pool=THREADS
    )
    await indexing.index(IndexRequest(root=ROOT))
    fusion = FusionConfig(semantic_abstain_spread=1.0, min_candidates=1)
    plain = RankingConfig(enabled=False)
    service = SearchService(store, embedder, fusion=fusion, ranking=plain)
    lexical = await service.search(SearchQuery.build("parse", mode="lexical", limit=10))
    hybrid = await service.search(SearchQuery.build("parse", mode="hybrid", limit=10))
    unstemmed = SearchService(store, embedder, fusion=fusion, ranking=plain, stem_weight=0)
    without = await unstemmed.search(SearchQuery.build("parse", mode="lexical", limit=10))
    # The groups change the lexical list (else this test could not tell the two apart) ...
    assert [h.file_path for h in lexical.hits] != [h.file_path for h in without.hits]
    # ... and the abstaining hybrid search leads with lexical mode's list, scores and all.
    assert hybrid.mode is SearchMode.HYBRID
    assert hybrid.hits[: len(lexical.hits)] == lexical.hits
    # With the groups off, it leads with the plain list.
    off = await unstemmed.search(SearchQuery.build("parse", mode="hybrid", limit=10))
    assert off.hits[: len(without.hits)] == without.hits
