"""SearchService with a lazy embedder and mixed projects: a search with no vectors to compare
loads no model, and a repository indexed without vectors is ranked lexically (and named)
beside repositories that hold them."""

from __future__ import annotations

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.errors import EmbedderUnavailable, Hint, ModelMismatch
from codebase_mcp_search.core.models import IndexRequest, SearchMode, SearchQuery
from codebase_mcp_search.core.ports import Embedder
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS, needs_forced_reindex

TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)
EMB = HashingEmbedder(128, inline=False)

SETTINGS = """def load_settings(path):
    \"\"\"Read the settings file and parse it as JSON.\"\"\"
    return json.load(open(path))
"""
MAILER = """def send_email(recipient, body):
    \"\"\"Deliver a message through the SMTP relay.\"\"\"
    relay.sendmail(recipient, body)
"""
TREE = InMemorySourceTree(
    {"/with": {"settings.py": SETTINGS.encode()}, "/without": {"mail.py": MAILER.encode()}}
)


class Provider:
    """An embedder provider that records its calls (and fails, when told to)."""

    def __init__(self, embedder: Embedder | None = EMB, *, fail: bool = False) -> None:
        self.embedder = embedder
        self.fail = fail
        self.calls = 0

    async def __call__(self) -> Embedder | None:
        self.calls += 1
        if self.fail:
            raise AssertionError("the embedder was resolved")
        return self.embedder


async def _index(store: InMemoryChunkStore, root: str, embedder: Embedder | None) -> str:
    """Both layers of ``root``: its chunks, then their vectors (with an embedder)."""
    service = IndexingService(store, TREE, CHUNKER, TOKENS, embedder, chunking_pool=THREADS)
    result = await service.index(IndexRequest(root=root))
    await service.build_vectors(IndexRequest(root=root))
    return result.repository_id


async def _mixed() -> tuple[InMemoryChunkStore, str, str]:
    store = InMemoryChunkStore()
    with_id = await _index(store, "/with", EMB)
    without_id = await _index(store, "/without", None)
    return store, with_id, without_id


async def test_lexical_and_hybrid_searches_without_vectors_never_resolve_the_embedder() -> None:
    store = InMemoryChunkStore()
    await _index(store, "/without", None)
    provider = Provider(fail=True)
    service = SearchService(store, provider)
    lexical = await service.search(SearchQuery.build("send email", mode="lexical"))
    hybrid = await service.search(SearchQuery.build("send email", mode="hybrid"))
    unasked = await service.search(SearchQuery.build("send email"))  # the service decides
    assert provider.calls == 0
    for result in (lexical, hybrid, unasked):
        assert result.mode is SearchMode.LEXICAL and result.hits[0].symbol == "send_email"
        assert result.lexical_only_repositories == []
    assert hybrid.hits == lexical.hits == unasked.hits


async def test_a_lexical_search_of_a_project_with_vectors_never_resolves_it() -> None:
    store, _, _ = await _mixed()
    provider = Provider(fail=True)
    result = await SearchService(store, provider).search(
        SearchQuery.build("load settings", mode="lexical")
    )
    assert provider.calls == 0 and result.hits[0].symbol == "load_settings"


async def test_semantic_and_hybrid_searches_with_vectors_resolve_it_once() -> None:
    store = InMemoryChunkStore()
    await _index(store, "/with", EMB)
    provider = Provider()
    service = SearchService(store, provider)
    for mode in ("semantic", "hybrid", "semantic"):
        result = await service.search(SearchQuery.build("load settings json", mode=mode))
        assert result.mode is SearchMode(mode) and result.hits[0].symbol == "load_settings"
    assert provider.calls == 1


async def test_a_provider_giving_no_embedder_refuses_semantic_and_degrades_hybrid() -> None:
    store = InMemoryChunkStore()
    await _index(store, "/with", EMB)
    service = SearchService(store, Provider(None))
    with pytest.raises(EmbedderUnavailable) as err:
        await service.search(SearchQuery.build("load settings", mode="semantic"))
    assert err.value.hint is Hint.SEMANTIC_MODEL and "hash" not in err.value.message
    result = await service.search(SearchQuery.build("load settings", mode="hybrid"))
    assert result.mode is SearchMode.LEXICAL and result.hits


@pytest.mark.parametrize("lazy", [False, True])
async def test_a_repository_without_vectors_is_ranked_lexically_in_a_mixed_project(
    lazy: bool,
) -> None:
    store, with_id, without_id = await _mixed()
    service = SearchService(store, Provider() if lazy else EMB)
    for mode in ("hybrid", "semantic"):
        result = await service.search(SearchQuery.build("send email recipient", mode=mode))
        assert result.mode is SearchMode(mode)
        assert result.lexical_only_repositories == ["without"]
        assert {h.repository_id for h in result.hits} == {with_id, without_id}, mode
        mail = next(h for h in result.hits if h.repository_id == without_id)
        assert mail.symbol == "send_email" and 0 < mail.similarity_score <= 1
    # Restricted to the repository with vectors: nothing was ranked lexically instead.
    only = await service.search(
        SearchQuery.build("load settings", mode="semantic", repository_id=with_id)
    )
    assert only.lexical_only_repositories == [] and only.hits[0].symbol == "load_settings"
    # Restricted to the one without: ranked lexically, in semantic mode too.
    alone = await service.search(
        SearchQuery.build("send email", mode="semantic", repository_id=without_id)
    )
    assert alone.lexical_only_repositories == ["without"]
    assert [h.symbol for h in alone.hits] == ["send_email"] and alone.total_count == 1


async def test_indexing_the_lexical_only_repository_adds_its_vectors_without_force() -> None:
    store, _, without_id = await _mixed()
    service = IndexingService(store, TREE, CHUNKER, TOKENS, EMB, chunking_pool=THREADS)
    again = await service.index(IndexRequest(root="/without"))
    assert again.files_indexed == 1 and again.vectors_missing > 0
    assert (await service.build_vectors(IndexRequest(root="/without"))).chunks_embedded > 0
    repo = await store.get_repository(without_id)
    assert repo.embedding_model == EMB.model
    result = await SearchService(store, EMB).search(
        SearchQuery.build("send email", mode="semantic")
    )
    assert result.lexical_only_repositories == []
    assert {h.repository_id for h in result.hits} >= {without_id}


async def test_a_repository_with_vectors_of_another_model_still_refuses() -> None:
    store, _, _ = await _mixed()
    other = HashingEmbedder(64, inline=False)
    for embedder in (other, Provider(other)):
        service = SearchService(store, embedder)
        for mode in ("semantic", "hybrid"):
            with pytest.raises(ModelMismatch, check=needs_forced_reindex):
                await service.search(SearchQuery.build("load settings", mode=mode))
