"""Files a question names by their path join the lexical candidates (``path_files``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import (
    IndexRequest,
    ScoredChunk,
    SearchFilters,
    SearchQuery,
    StemGroup,
)
from codebase_mcp_search.core.models.text import path_in_directory
from codebase_mcp_search.core.ranking import RankingConfig, analyse_query
from codebase_mcp_search.core.ranking.path_words import (
    PathIndex,
    files_path_matches,
    path_shares,
    path_word_weights,
)
from codebase_mcp_search.core.services import IndexingService, SearchService
from codebase_mcp_search.core.services.search import path_files
from tests.factories import THREADS

ROOT = "/repo"
TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)
QUESTION = "color definitions and terminal color support"
# Ten files that hold every word of the question in a short body, and one named after its
# subject whose long body says "color" once: BM25 ranks the ten first.
THEMES = {f"themes/t{i}.py": "TEXT = 'terminal support definition color'\n" for i in range(10)}
COLORS = "\n".join(f"ESCAPE_{i} = '\\033[{i}m'" for i in range(150)) + "\n# one color each\n"
# A list of five candidates (the fusion's depth), so the ten fill it.
NARROW = FusionConfig(min_candidates=5, candidates=5)

WORDS = ["color", "colors", "json", "parser", "parse", "util", "lib", "src", "theme", "term"]
paths_of = st.lists(
    st.builds(
        lambda folders, name, ext: "/".join([*folders, name]) + ext,
        st.lists(st.sampled_from(WORDS), max_size=2),
        st.sampled_from(WORDS),
        st.sampled_from([".py", ".c", ""]),
    ),
    min_size=0,
    max_size=12,
    unique=True,
)


@settings(max_examples=200, deadline=None)
@given(
    files=paths_of,
    words=st.lists(st.sampled_from([*WORDS, "and", "how", "x"]), min_size=1, max_size=4),
    floor=st.sampled_from([0.0, 0.25, 1.0]),
    directory=st.sampled_from([None, "lib", "src/json", "theme"]),
)
def test_the_path_index_scores_every_file_as_the_candidate_functions_do(
    files: list[str], words: list[str], floor: float, directory: str | None
) -> None:
    profile = analyse_query(" ".join(words))
    inside = [f for f in files if directory is None or path_in_directory(f, directory)]
    matches = files_path_matches(profile, inside)
    weights = path_word_weights(profile, inside, floor, matches)
    expected = {f: s for f, s in path_shares(profile, weights, matches).items() if matches[f]}
    found = PathIndex.of(files).shares(profile, floor, directory)
    assert found.keys() == expected.keys()
    for f, share in expected.items():
        assert found[f] == pytest.approx(share)


class _Asking(InMemoryChunkStore):
    """Notes each lexical search within one file (its path and stem groups) and each
    listing of a repository's paths."""

    def __init__(self) -> None:
        super().__init__()
        self.within: list[tuple[str, tuple[StemGroup, ...]]] = []
        self.listings = 0

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        self.listings += paths is None
        return await super().file_hashes(repository_id, paths)

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        if filters.directory is not None and "." in filters.directory:
            self.within.append((filters.directory, tuple(stems)))
        return await super().lexical_search(terms, filters, limit, stems)


async def _indexed(
    files: dict[str, str], store: InMemoryChunkStore, embedder: HashingEmbedder | None = None
) -> InMemorySourceTree:
    tree = InMemorySourceTree({ROOT: {k: v.encode() for k, v in files.items()}})
    await IndexingService(store, tree, CHUNKER, TOKENS, embedder, chunking_pool=THREADS).index(
        IndexRequest(root=ROOT)
    )
    return tree


async def _paths(service: SearchService, mode: str, **filters: str) -> list[str]:
    result = await service.search(SearchQuery.build(QUESTION, mode=mode, limit=3, **filters))
    return [h.file_path for h in result.hits]


async def test_lexical_mode_finds_the_file_named_after_the_question_that_bm25_left_out() -> None:
    store = _Asking()
    await _indexed({**THEMES, "lib/colors.py": COLORS}, store)
    without = SearchService(store, None, fusion=NARROW, ranking=RankingConfig(path_files=0))
    assert "lib/colors.py" not in await _paths(without, "lexical")
    assert store.within == []
    service = SearchService(store, None, fusion=NARROW)
    assert "lib/colors.py" in await _paths(service, "lexical")
    # Asked within the file with lexical mode's stem groups, so its score is the list's. (The
    # ten themes are one text, one hit: the deeper pool that fills the limit asks again.)
    ((path, groups),) = set(store.within)
    assert path == "lib/colors.py" and groups


async def test_a_directory_filter_keeps_the_named_files_inside_it() -> None:
    store = _Asking()
    await _indexed({**THEMES, "lib/colors.py": COLORS}, store)
    service = SearchService(store, None, fusion=NARROW)
    found = await _paths(service, "lexical", directory="themes")
    assert found and all(p.startswith("themes/") for p in found)
    assert store.within == []


@pytest.mark.parametrize("refresh", [0.0, 3600.0])
async def test_a_repositorys_paths_are_read_again_once_it_changes(
    refresh: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(path_files, "REFRESH_SECONDS", refresh)
    store = _Asking()
    tree = await _indexed(dict(THEMES), store)
    service = SearchService(store, None, fusion=NARROW)
    store.listings = 0  # the indexing run's own
    assert "lib/colors.py" not in await _paths(service, "lexical")
    assert "lib/colors.py" not in await _paths(service, "lexical")
    assert store.listings == 1  # nothing changed: the paths kept
    tree.put(ROOT, "lib/colors.py", COLORS)
    await IndexingService(store, tree, CHUNKER, TOKENS, None, chunking_pool=THREADS).index(
        IndexRequest(root=ROOT)
    )
    store.listings = 0
    found = "lib/colors.py" in await _paths(service, "lexical")
    # Read again once the repository changed, unless read within the refresh time.
    assert (store.listings, found) == ((1, True) if refresh == 0 else (0, False))


async def test_hybrid_search_adds_the_named_file_to_the_list_it_fuses() -> None:
    store = _Asking()
    embedder = HashingEmbedder(dimension=64)
    await _indexed({**THEMES, "lib/colors.py": COLORS}, store, embedder)
    # The semantic list always heard (the hashing vectors of these files score alike).
    heard = NARROW.model_copy(update={"semantic_abstain_spread": 0.0})
    service = SearchService(store, embedder, fusion=heard)
    result = await service.search(SearchQuery.build(QUESTION, mode="hybrid", limit=3))
    assert result.mode.value == "hybrid"
    assert "lib/colors.py" in [h.file_path for h in result.hits]
    # The fused list is asked without stem groups: the named file's chunk is scored alike.
    assert set(store.within) == {("lib/colors.py", ())}
