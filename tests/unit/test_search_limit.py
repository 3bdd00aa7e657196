"""A search's limit only cuts its answers: the first answers of a search are those of the same
search with a smaller limit, in every mode, ranked or not, because each retrieval contributes
the same candidates whatever the limit (``FusionConfig.candidates``); and when identical or
overlapping chunks collapse that pool below the limit, a deeper pool fills it after them."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.core.defaults import MAX_SEARCH_LIMIT
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import IndexRequest, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS
from tests.unit.indexing_doubles import CHUNKER, ROOT, TOKENS

WORDS = ["parse", "config", "token", "user", "cache", "render", "send", "mail", "load", "path"]
FOLDERS = ["core", "web", "cli", "tests", "util"]
DEPTH = FusionConfig().depth(1)


def _files(seed: int) -> dict[str, bytes]:
    """Three hundred functions over ten words, in 150 files: a common word matches more
    chunks than any retrieval's candidates, so how deep each retrieval reads matters."""
    rng = random.Random(seed)
    files: dict[str, bytes] = {}
    for i in range(150):
        body = ""
        for j in range(2):
            a, b, c = rng.sample(WORDS, 3)
            body += f"def {a}_{b}_{j}(x):\n    # {c} the {a} and {rng.choice(WORDS)}\n"
            body += f"    return {c}_{rng.choice(WORDS)}(x)\n\n\n"
        files[f"{rng.choice(FOLDERS)}/{rng.choice(WORDS)}_{i}.py"] = body.encode()
    return files


async def _service(seed: int, ranking: bool, copies: int = 1) -> SearchService:
    """A project of ``copies`` identical repositories (worktrees of one tree, say)."""
    store, embedder = InMemoryChunkStore(), HashingEmbedder(64, inline=False)
    roots = [ROOT] + [f"{ROOT}-copy{i}" for i in range(1, copies)]
    tree = InMemorySourceTree(dict.fromkeys(roots, _files(seed)))
    indexing = IndexingService(store, tree, CHUNKER, TOKENS, embedder, chunking_pool=THREADS)
    for root in roots:
        await indexing.index(IndexRequest(root=root))
        await indexing.build_vectors(IndexRequest(root=root))
    repo, *_ = await store.list_repositories()
    assert len(await store.chunks(repo.id)) > 2 * DEPTH
    return SearchService(store, embedder, ranking=RankingConfig(enabled=ranking))


_queries = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    min_size=1,
    max_size=4,
)
_limits = st.lists(st.integers(1, MAX_SEARCH_LIMIT), min_size=2, max_size=4, unique=True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), _queries, _limits, st.booleans(), st.sampled_from([1, 3]))
async def test_a_larger_limit_only_adds_answers_after_the_first_ones(
    seed: int, queries: list[str], limits: list[int], ranking: bool, copies: int
) -> None:
    service = await _service(seed, ranking, copies)
    for text, mode in itertools.product(queries, ("hybrid", "lexical", "semantic")):
        results = {
            limit: await service.search(SearchQuery.build(text, mode=mode, limit=limit))
            for limit in sorted(limits)
        }
        for small, large in itertools.combinations(sorted(limits), 2):
            first, more = results[small], results[large]
            assert first.hits == more.hits[:small], (text, mode, small, large)
            assert first.total_count == more.total_count


@pytest.mark.parametrize("ranking", [True, False])
async def test_identical_repositories_still_fill_the_limit(ranking: bool) -> None:
    # Three copies of one tree: each place found three times collapses into one hit with
    # two other locations, so the pool of the first candidates holds fewer places than 50.
    service = await _service(7, ranking, copies=3)
    for mode in ("hybrid", "lexical", "semantic"):
        result = await service.search(SearchQuery.build("load path", mode=mode, limit=50))
        assert len(result.hits) == MAX_SEARCH_LIMIT, mode
        places = {(h.file_path, h.start_line) for h in result.hits}
        assert len(places) == len(result.hits), mode  # no place twice
