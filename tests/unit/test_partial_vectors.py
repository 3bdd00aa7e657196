"""Search over a semantic layer still being built: a chunk without a vector is scored by its
lexical evidence alone, so with no vectors hybrid ranks exactly as lexical, and a missing
vector is never held against a chunk."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core.fusion import FusionConfig, fuse, merged
from codebase_mcp_search.core.models import IndexRequest, SearchMode, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, ROOT, TOKENS
from tests.unit.test_fusion import _ranked

lists = st.lists(st.integers(0, 30), unique=True, max_size=15)
configs = st.builds(
    FusionConfig,
    method=st.sampled_from(["rrf", "linear"]),
    normalisation=st.sampled_from(["none", "minmax"]),
    semantic_weight=st.floats(0.0, 5.0),
    lexical_weight=st.floats(0.01, 5.0),
    best_share=st.floats(0.0, 1.0),
)


def _descending(n: int) -> list[float]:
    return [1.0 - i / 40 for i in range(n)]


@given(lists, configs)
def test_with_no_vector_anywhere_fusion_ranks_as_the_lexical_list(
    ids: list[int], config: FusionConfig
) -> None:
    lexical = _ranked(ids, _descending(len(ids)))
    fused = fuse([], lexical, config, unvectored={s.chunk.id for s in lexical})
    assert [f.chunk.id for f in fused] == [s.chunk.id for s in lexical]


@given(lists, lists, configs, st.data())
def test_a_chunk_without_a_vector_keeps_its_lexical_evidence(
    sem_ids: list[int], lex_ids: list[int], config: FusionConfig, data: st.DataObject
) -> None:
    lexical = _ranked(lex_ids, _descending(len(lex_ids)))
    # Chunks without a vector are never in the semantic list.
    missing = set(data.draw(st.lists(st.sampled_from(lex_ids), unique=True))) if lex_ids else set()
    kept = [i for i in sem_ids if i not in missing]
    semantic = _ranked(kept, _descending(len(kept)))
    unvectored = {f"c{i}" for i in missing}
    fused = {f.chunk.id: f.score for f in fuse(semantic, lexical, config, unvectored)}
    # Whatever the semantic list holds, such a chunk scores what the lexical list alone gives.
    alone = {f.chunk.id: f.score for f in fuse([], lexical, config, unvectored)}
    for cid in unvectored:
        assert fused[cid] == alone[cid]
    # And their order among themselves is the lexical one.
    order = [s.chunk.id for s in lexical if s.chunk.id in unvectored]
    assert sorted(order, key=lambda c: -fused[c]) == order


@given(lists, lists)
def test_a_semantic_search_merges_each_chunk_by_its_own_evidence(
    sem_ids: list[int], lex_ids: list[int]
) -> None:
    lex_ids = [i for i in lex_ids if i not in sem_ids]
    semantic = _ranked(sem_ids, _descending(len(sem_ids)))
    lexical = _ranked(lex_ids, _descending(len(lex_ids)))
    out = merged(semantic, lexical, FusionConfig())
    assert {s.chunk.id for s in out} == {s.chunk.id for s in (*semantic, *lexical)}
    assert all(0.0 <= s.score <= 1.0 for s in out)
    position = {s.chunk.id: i for i, s in enumerate(out)}
    for ranked in (semantic, lexical):
        places = [position[s.chunk.id] for s in ranked]
        assert places == sorted(places)


# --- through the search service, over an index whose vectors are partly built ---------------

WORDS = ["parse", "config", "token", "user", "cache", "render", "send", "mail", "load", "path"]
_functions = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS), st.sampled_from(WORDS)),
    min_size=1,
    max_size=12,
    unique=True,
)
_queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
# Questions in words that may name code (``parse_config``): their own fusion weights.
_named_queries = st.lists(
    st.sampled_from([*WORDS, "parse_config", "load_path", "sendMail"]), min_size=1, max_size=3
).map(" ".join)


def _tree(functions: list[tuple[str, str, str]]) -> InMemorySourceTree:
    files = {
        f"m{i}.py": f"def {a}_{b}(x):\n    # {c} the {a}\n    return {c}(x)\n".encode()
        for i, (a, b, c) in enumerate(functions)
    }
    return InMemorySourceTree({ROOT: files})


async def _indexed(functions: list[tuple[str, str, str]], share: float, seed: int):  # type: ignore[no-untyped-def]
    """A repository of ``functions`` whose semantic layer holds vectors for ``share`` of its
    chunks, chosen at random."""
    store, embedder = InMemoryChunkStore(), HashingEmbedder(64, inline=False)
    service = IndexingService(
        store, _tree(functions), CHUNKER, TOKENS, embedder, chunking_pool=THREADS
    )
    result = await service.index(IndexRequest(root=ROOT))
    backlog = await store.vector_backlog(result.repository_id, 10_000)
    chosen = random.Random(seed).sample(backlog, round(share * len(backlog)))
    vectors = (await embedder.embed_documents([c.content for c in chosen])).vectors
    await store.set_vectors(
        result.repository_id, {c.id: v for c, v in zip(chosen, vectors, strict=True)}
    )
    return store, embedder


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_functions, _named_queries, st.booleans(), st.sampled_from([None, 0.5, 2.0]))
async def test_with_no_vectors_a_hybrid_search_ranks_exactly_as_a_lexical_one(
    functions: list[tuple[str, str, str]], text: str, ranking: bool, named: float | None
) -> None:
    store, embedder = await _indexed(functions, 0.0, 0)
    config = RankingConfig(enabled=ranking, named_lexical_weight=named)
    service = SearchService(store, embedder, ranking=config)
    lexical = await service.search(SearchQuery.build(text, mode="lexical", limit=50))
    hybrid = await service.search(SearchQuery.build(text, mode="hybrid", limit=50))
    assert hybrid.mode is SearchMode.LEXICAL
    assert hybrid.hits == lexical.hits and hybrid.total_count == lexical.total_count
    (layer,) = hybrid.semantic_coverage
    assert (layer.vectors, layer.chunks) == (0, len(functions))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_functions, _queries, st.floats(0.1, 0.9), st.integers(0, 1000))
async def test_over_partial_vectors_chunks_without_one_keep_their_lexical_order(
    functions: list[tuple[str, str, str]], text: str, share: float, seed: int
) -> None:
    store, embedder = await _indexed(functions, share, seed)
    service = SearchService(store, embedder, ranking=RankingConfig(enabled=False))
    lexical = await service.search(SearchQuery.build(text, mode="lexical", limit=50))
    hybrid = await service.search(SearchQuery.build(text, mode="hybrid", limit=50))
    missing = await store.without_vectors([h.chunk_id for h in lexical.hits])
    in_hybrid = [h.chunk_id for h in hybrid.hits if h.chunk_id in missing]
    in_lexical = [h.chunk_id for h in lexical.hits if h.chunk_id in missing]
    # Every lexical hit without a vector is still found, in the lexical order.
    assert in_hybrid == in_lexical
    chunks = await store.chunks(hybrid.hits[0].repository_id) if hybrid.hits else []
    without = await store.without_vectors([c.id for c in chunks])
    if chunks and without:
        (layer,) = hybrid.semantic_coverage
        assert (layer.chunks, layer.chunks - layer.vectors) == (len(chunks), len(without))


class _Spy:
    """A store that records whether each lexical search asked for stem groups."""

    def __init__(self, store: InMemoryChunkStore) -> None:
        self._store = store
        self.asked: list[bool] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    async def lexical_search(self, terms, filters, limit, stems=()):  # type: ignore[no-untyped-def]
        self.asked.append(bool(stems))
        return await self._store.lexical_search(terms, filters, limit, stems)


@pytest.mark.parametrize(("share", "stemmed"), [(0.0, True), (0.5, False), (1.0, False)])
async def test_hybrid_asks_for_other_forms_only_with_no_vector_to_compare(
    share: float, stemmed: bool
) -> None:
    """With no vector to compare a hybrid search ranks as a lexical one, its words' other
    forms asked for too; with some, the fused list asks for none (measured lower at a
    quarter of the vectors: bench/README.md "round nine")."""
    functions = [("parse", "config", "load"), ("send", "mail", "user"), ("render", "path", "x")]
    store, embedder = await _indexed(functions, share, 0)
    spy = _Spy(store)
    service = SearchService(spy, embedder)  # type: ignore[arg-type]
    await service.search(SearchQuery.build("parsing the config", mode="hybrid"))
    # One lexical statement a search: with groups when nothing is compared, else the fused
    # list's, without.
    assert spy.asked == [stemmed]


@pytest.mark.parametrize("share", [0.0, 1.0])
async def test_hybrid_without_an_embedder_asks_once_with_groups(share: float) -> None:
    """No embedder to compare vectors with: hybrid ranks as lexical whatever the vectors held,
    with one lexical statement, groups and all."""
    functions = [("parse", "config", "load"), ("send", "mail", "user"), ("render", "path", "x")]
    store, _ = await _indexed(functions, share, 0)
    spy = _Spy(store)
    service = SearchService(spy, None)  # type: ignore[arg-type]
    result = await service.search(SearchQuery.build("parsing the config", mode="hybrid"))
    assert spy.asked == [True]
    assert result.mode is SearchMode.LEXICAL
    lexical = await SearchService(store, None).search(
        SearchQuery.build("parsing the config", mode="lexical")
    )
    assert result.hits == lexical.hits
