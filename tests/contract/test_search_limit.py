"""The limit property (``tests/unit/test_search_limit.py``) on every chunk store: the first
answers of a search are those of the same search with a smaller limit, in every mode, over a
tree and over three identical copies of it (whose collapsed pool the deeper one fills; which
copy is the hit and which its other locations is the same whatever the store's caches hold)."""

from __future__ import annotations

import itertools

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemorySourceTree
from codebase_mcp_search.core.defaults import MAX_SEARCH_LIMIT
from codebase_mcp_search.core.models import IndexRequest, SearchHit, SearchQuery
from codebase_mcp_search.core.ports import ChunkStore
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, ROOT, TOKENS
from tests.unit.test_search_limit import _files


def _shown(hit: SearchHit) -> SearchHit:
    # Postgres compares vectors in SQL until it holds them in the process, where a cosine
    # differs in its last digits: a cache's state, not the limit.
    return hit.model_copy(update={"similarity_score": round(hit.similarity_score, 6)})


QUERIES = ["load path", "parse", "cache user token", "send mail config"]
LIMITS = [1, 5, 10, 33, MAX_SEARCH_LIMIT]


@pytest.mark.parametrize("copies", [1, 3])
async def test_a_larger_limit_only_adds_answers_after_the_first_ones(
    chunk_store: ChunkStore, copies: int
) -> None:
    embedder = HashingEmbedder(64, inline=False)
    roots = [ROOT] + [f"{ROOT}-copy{i}" for i in range(1, copies)]
    tree = InMemorySourceTree(dict.fromkeys(roots, _files(11)))
    indexing = IndexingService(chunk_store, tree, CHUNKER, TOKENS, embedder, chunking_pool=THREADS)
    for root in roots:
        await indexing.index(IndexRequest(root=root))
        await indexing.build_vectors(IndexRequest(root=root))
    service = SearchService(chunk_store, embedder)
    for text, mode in itertools.product(QUERIES, ("hybrid", "lexical", "semantic")):
        results = {
            n: await service.search(SearchQuery.build(text, mode=mode, limit=n)) for n in LIMITS
        }
        assert len(results[MAX_SEARCH_LIMIT].hits) == MAX_SEARCH_LIMIT, (text, mode)
        for small, large in itertools.combinations(LIMITS, 2):
            first, more = results[small].hits, results[large].hits[:small]
            assert [_shown(h) for h in first] == [_shown(h) for h in more], (text, mode, small)
            assert results[small].total_count == results[large].total_count
