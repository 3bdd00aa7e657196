"""SearchService: modes, scores, filters, duplicate collapsing, context from the snapshot."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.errors import (
    EmbedderUnavailable,
    InvalidLimit,
    ModelMismatch,
    RepositoryNotFound,
    StoreUnavailable,
    ValidationFailed,
)
from codebase_mcp_search.core.models import (
    Chunk,
    IndexRequest,
    SearchFilters,
    SearchMode,
    SearchQuery,
)
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import IndexingService, SearchService
from tests.factories import THREADS, needs_forced_reindex

ROOT = "/repo"
TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)

HELPERS = """import json


def load_settings(path):
    \"\"\"Read the settings file and parse it as JSON.\"\"\"
    with open(path) as handle:
        return json.load(handle)


def send_email(recipient, body):
    \"\"\"Deliver a message through the SMTP relay.\"\"\"
    relay = connect_smtp()
    relay.sendmail(recipient, body)
"""

DUPLICATE = """def slugify(text):
    \"\"\"Lowercase text and join its words with dashes.\"\"\"
    return "-".join(text.lower().split())
"""


async def _indexed(embedder: HashingEmbedder | None = None) -> tuple[InMemoryChunkStore, str]:
    files = {
        "pkg/helpers.py": HELPERS,
        "pkg/text/slug.py": DUPLICATE,
        "vendor/copy/slug.py": DUPLICATE,
        "web/app.ts": "export function renderPage(title: string): string {\n  return `<h1>${title}</h1>`;\n}\n",
    }
    tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in files.items()}})
    store = InMemoryChunkStore()
    service = IndexingService(store, tree, CHUNKER, TOKENS, embedder, chunking_pool=THREADS)
    result = await service.index(IndexRequest(root=ROOT))
    await service.build_vectors(IndexRequest(root=ROOT))
    return store, result.repository_id


async def test_lexical_finds_identifier_with_context_from_snapshot() -> None:
    store, _ = await _indexed()
    service = SearchService(store, None)
    assert (await service.search(SearchQuery.build("send_email"))).mode is SearchMode.LEXICAL
    result = await service.search(SearchQuery.build("send_email", mode="lexical"))
    top = result.hits[0]
    assert top.symbol == "send_email" and top.file_path == "pkg/helpers.py"
    assert (top.start_line, top.end_line) == (10, 13)
    assert "def load_settings" in top.context_before and top.context_after == ""
    assert 0 < top.similarity_score <= 1
    assert result.total_count >= 1 and result.mode is SearchMode.LEXICAL


async def test_identical_code_collapses_into_one_hit_with_other_locations() -> None:
    store, _ = await _indexed()
    result = await SearchService(store, None).search(SearchQuery.build("slugify dashes"))
    slugs = [h for h in result.hits if h.symbol == "slugify"]
    assert len(slugs) == 1
    assert [loc.file_path for loc in slugs[0].other_locations] == ["vendor/copy/slug.py"]
    assert slugs[0].file_path == "pkg/text/slug.py"


@pytest.mark.parametrize(
    ("kwargs", "paths"),
    [
        ({"file_type": "ts"}, {"web/app.ts"}),
        ({"language": "typescript"}, {"web/app.ts"}),
        ({"directory": "pkg/text/"}, {"pkg/text/slug.py"}),
        ({"directory": "./vendor"}, {"vendor/copy/slug.py"}),
        # An absolute directory inside the repository's root is that folder of it.
        ({"directory": f"{ROOT}/pkg/text"}, {"pkg/text/slug.py"}),
        ({"directory": f"{ROOT}/vendor/"}, {"vendor/copy/slug.py"}),
        ({"directory": ROOT, "file_type": "ts"}, {"web/app.ts"}),
    ],
)
async def test_filters(kwargs: dict[str, str], paths: set[str]) -> None:
    store, _ = await _indexed()
    result = await SearchService(store, None).search(
        SearchQuery.build("render page slugify text title", **kwargs)  # type: ignore[arg-type]
    )
    assert result.hits and {h.file_path for h in result.hits} == paths


async def test_semantic_and_hybrid_with_an_embedder() -> None:
    emb = HashingEmbedder(256)
    store, repo_id = await _indexed(emb)
    service = SearchService(store, emb)
    assert (await service.search(SearchQuery.build("send_email"))).mode is SearchMode.HYBRID
    for mode in ("semantic", "hybrid"):
        result = await service.search(
            SearchQuery.build("load settings json file", mode=mode, repository_id=repo_id)
        )
        assert result.hits[0].symbol == "load_settings", mode
        assert all(0 <= h.similarity_score <= 1 for h in result.hits)
    semantic = await service.search(SearchQuery.build("anything", mode="semantic"))
    assert semantic.total_count == len(await store.chunks(repo_id))


async def test_semantic_without_embedder_is_an_error_and_hybrid_degrades() -> None:
    store, _ = await _indexed()
    service = SearchService(store, None)
    with pytest.raises(EmbedderUnavailable):
        await service.search(SearchQuery.build("x y", mode="semantic"))
    result = await service.search(SearchQuery.build("send email", mode="hybrid"))
    assert result.mode is SearchMode.LEXICAL and result.hits


async def test_searching_with_another_model_is_refused() -> None:
    store, repo_id = await _indexed(HashingEmbedder(64))
    service = SearchService(store, HashingEmbedder(128))
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await service.search(SearchQuery.build("load settings", mode="semantic"))
    with pytest.raises(RepositoryNotFound):
        await service.search(
            SearchQuery.build(
                "x", mode="semantic", repository_id="0b6f3a52-8d4e-4c47-9a51-3f2b1c0d9e77"
            )
        )
    lexical = await service.search(SearchQuery.build("load settings", mode="lexical"))
    assert lexical.hits[0].repository_id == repo_id


async def test_a_refused_model_stops_the_vector_search_running_beside_the_check() -> None:
    # The model check and the vector search run at once; when the check refuses, the search
    # is cancelled and awaited (no task left running) and the refusal is raised as is.
    store, _ = await _indexed(HashingEmbedder(64))
    started, cancelled = asyncio.Event(), asyncio.Event()

    class SlowVectors(InMemoryChunkStore):
        async def vector_search(self, *args: Any, **kwargs: Any) -> Any:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async def list_repositories(self) -> Any:
            await started.wait()
            return await store.list_repositories()

    slow = SlowVectors()
    slow.__dict__.update(store.__dict__)
    with pytest.raises(ModelMismatch, check=needs_forced_reindex):
        await _semantic_search(slow, HashingEmbedder(128))
    assert cancelled.is_set()


async def test_a_failed_vector_search_stops_the_model_check_running_beside_it() -> None:
    # The other order: the search fails while the check still runs; the check is cancelled
    # at once (not waited for) and the search's failure is raised as is.
    store, _ = await _indexed(HashingEmbedder(64))
    cancelled = asyncio.Event()

    class Failing(InMemoryChunkStore):
        async def vector_search(self, *args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("database down")

        async def list_repositories(self) -> Any:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

    failing = Failing()
    failing.__dict__.update(store.__dict__)
    with pytest.raises(StoreUnavailable, match="database down"):
        await _semantic_search(failing, HashingEmbedder(64))
    assert cancelled.is_set()


async def _semantic_search(store: InMemoryChunkStore, embedder: HashingEmbedder) -> None:
    """A semantic search for "load settings" through ``store``, given 5 s."""
    service = SearchService(store, embedder)
    await asyncio.wait_for(service.search(SearchQuery.build("load settings", mode="semantic")), 5)


async def test_overlapping_chunks_of_one_file_are_not_both_returned() -> None:
    # An oversized function is split with overlapping lines; a query matching the overlap
    # must not return both parts.
    body = "\n".join(f"    total_amount = total_amount + compute_value({i})" for i in range(80))
    text = f"def accumulate():\n    total_amount = 0\n{body}\n    return total_amount\n"
    tree = InMemorySourceTree({ROOT: {"big.py": text.encode()}})
    store = InMemoryChunkStore()
    chunker = TreeSitterChunker(TOKENS, max_tokens=200)
    await IndexingService(store, tree, chunker, TOKENS, None, chunking_pool=THREADS).index(
        IndexRequest(root=ROOT)
    )
    chunks = await store.chunks((await store.list_repositories())[0].id)
    assert len(chunks) > 2
    result = await SearchService(store, None).search(
        SearchQuery.build("total amount compute value", limit=50)
    )
    spans = sorted((h.start_line, h.end_line) for h in result.hits)
    for (s1, e1), (s2, e2) in itertools.combinations(spans, 2):
        shared = min(e1, e2) - max(s1, s2) + 1
        assert shared / (min(e1 - s1, e2 - s2) + 1) < 0.5


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"text": ""}, ValidationFailed, "query"),
        ({"text": "   "}, ValidationFailed, "query"),
        ({"text": "x" * 501}, ValidationFailed, "500"),
        ({"text": "ok", "limit": 0}, InvalidLimit, "Limit must be between 1 and 50, got 0"),
        ({"text": "ok", "limit": 51}, InvalidLimit, "got 51"),
        ({"text": "ok", "mode": "fuzzy"}, ValidationFailed, "mode"),
        ({"text": "ok", "directory": "../etc"}, ValidationFailed, "directory"),
        ({"text": "ok", "directory": "/repo/../etc"}, ValidationFailed, "directory"),
        # No chunk carries an unknown language: refused, naming the known ones.
        (
            {"text": "ok", "language": "klingon"},
            ValidationFailed,
            r"language='klingon': unknown language; known: .*python, r, rst, ruby",
        ),
    ],
)
def test_query_validation(kwargs: dict, error: type[Exception], text: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(error, match=text):
        SearchQuery.build(**kwargs)


class _CountingStore(InMemoryChunkStore):
    """Counts the definitions lookups a search makes."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[list[str]] = []

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        self.lookups.append(list(names))
        return await super().definitions(names, filters, limit)


async def test_the_definitions_lookup_runs_only_where_a_definition_gains() -> None:
    store = _CountingStore()
    service = SearchService(store, None)
    await service.search(SearchQuery.build("JsonReader", mode="lexical"))
    await service.search(SearchQuery.build("how does JsonReader parse", mode="lexical"))
    assert store.lookups == [["JsonReader"]]
    embedded = SearchService(store, None, ranking=RankingConfig(embedded_factor=0.5))
    await embedded.search(SearchQuery.build("how does JsonReader parse", mode="lexical"))
    assert store.lookups == [["JsonReader"], ["JsonReader"]]


class _HashReadingStore(InMemoryChunkStore):
    """Counts which files' indexed hashes a search reads (the stale check names them; the
    listing of every path, for the files named by their path, is not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.hashes_read: list[list[str]] = []

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        if paths is not None:
            self.hashes_read.append(sorted(paths))
        return await super().file_hashes(repository_id, paths)


async def test_the_stale_check_reads_hashes_only_of_files_touched_since_the_index() -> None:
    files = {"pkg/helpers.py": HELPERS, "pkg/text/slug.py": DUPLICATE}
    tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in files.items()}})
    store = _HashReadingStore()
    await IndexingService(store, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS).index(
        IndexRequest(root=ROOT)
    )
    store.hashes_read.clear()  # the indexing run's own
    service = SearchService(store, None, source=tree)
    query = SearchQuery.build("send email slugify text", mode="lexical")
    first = await service.search(query)
    assert {h.file_path for h in first.hits} == set(files)
    assert not any(h.stale for h in first.hits)
    assert store.hashes_read == []  # nothing touched: a stat each, no hash read
    tree.put(ROOT, "pkg/helpers.py", HELPERS + "\n# edited\n")
    tree.put(ROOT, "pkg/text/slug.py", DUPLICATE)  # touched, the same bytes
    again = await service.search(query)
    assert store.hashes_read == [["pkg/helpers.py", "pkg/text/slug.py"]]
    assert {h.file_path for h in again.hits if h.stale} == {"pkg/helpers.py"}


async def test_an_absolute_directory_outside_every_repository_is_refused() -> None:
    store, repo_id = await _indexed()
    service = SearchService(store, None)
    for query in (
        SearchQuery.build("slugify", directory="/elsewhere/pkg"),
        SearchQuery.build("slugify", directory="/repository"),  # a prefix of text, not a path
        SearchQuery.build("slugify", directory="/elsewhere", repository_id=repo_id),
    ):
        with pytest.raises(ValidationFailed, match=r"is not inside .*relative to the root"):
            await service.search(query)


async def test_an_absolute_directory_searches_the_innermost_repository_holding_it() -> None:
    files = {"lib/outer.py": "def outer_helper():\n    pass\n"}
    inner = {"src/inner.py": "def inner_helper():\n    pass\n"}
    tree = InMemorySourceTree(
        {
            ROOT: {k: v.encode() for k, v in files.items()},
            f"{ROOT}/lib/vendored": {k: v.encode() for k, v in inner.items()},
        }
    )
    store = InMemoryChunkStore()
    indexing = IndexingService(store, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS)
    await indexing.index(IndexRequest(root=ROOT))
    vendored = await indexing.index(IndexRequest(root=f"{ROOT}/lib/vendored"))
    result = await SearchService(store, None).search(
        SearchQuery.build("helper", directory=f"{ROOT}/lib/vendored/src")
    )
    assert [(h.repository_id, h.file_path) for h in result.hits] == [
        (vendored.repository_id, "src/inner.py")
    ]


async def test_a_search_says_how_many_repositories_it_looked_in() -> None:
    empty = await SearchService(InMemoryChunkStore(), None).search(SearchQuery.build("x"))
    assert empty.hits == [] and empty.repositories_searched == 0
    store, _ = await _indexed()
    found = await SearchService(store, None).search(SearchQuery.build("slugify"))
    assert found.repositories_searched == 1
