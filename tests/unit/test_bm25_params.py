"""bench.bm25_params: a recording's lists asked again of a store rebuilt from its chunks are
the indexed store's, stem groups included, under any k1 and b; and the constants move them."""

from __future__ import annotations

import pytest
from bench import bm25_params, replay_store

from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.core import lexical, stems
from codebase_mcp_search.core.models import SearchFilters, StemGroup
from tests.factories import file_batch, repo

PIECES = {
    "src/parse.py": ["def parse(text):", "    return parser.parsing(text)"],
    "src/parser.py": ["class Parser:", "    def parsed(self): return self.tokens"],
    "src/handle.py": ["def handle(request):", "    handler.handled(request) " * 5],
    "src/token.py": ["def tokens(text):", "    return text.split()"],
}
QUERIES = ("parsing the tokens", "handler", "parser handled")


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.6, 0.3), (2.0, 0.9)])
async def test_rebuilt_lists_are_the_memory_store_s(k1: float, b: float) -> None:
    store = InMemoryChunkStore()
    await store.save_repository(repo())
    await store.replace_files("r1", [file_batch("r1", p, pieces) for p, pieces in PIECES.items()])
    chunks = await store.chunks("r1")
    flt = SearchFilters()
    keyed = [(tuple(lexical.query_terms(q)), flt) for q in QUERIES]
    grouped = [
        (terms, flt, tuple(StemGroup(g, 1.25) for g in stems.groups(terms))) for terms, _ in keyed
    ]
    data = {
        "chunks": chunks,
        "lexical": dict.fromkeys(keyed, ([], 0)),
        "stemmed": dict.fromkeys(grouped, ([], 0)),
    }
    with bm25_params.constants(k1, b):
        rebuilt = await bm25_params.rebuild(data, await replay_store.store_of(data))
        for terms, _ in keyed:
            want = await store.lexical_search(terms, flt, 50)
            assert _ids(rebuilt["lexical"][(terms, flt)]) == _ids(want)
        for terms, _, groups in grouped:
            want = await store.lexical_search(terms, flt, 50, groups)
            assert _ids(rebuilt["stemmed"][(terms, flt, groups)]) == _ids(want)
    assert (lexical.K1, lexical.B) == (1.2, 0.75)  # restored
    if (k1, b) != (1.2, 0.75):  # the constants reach the scores
        today = await bm25_params.rebuild(data, await replay_store.store_of(data))
        assert _ids(today["lexical"][keyed[0]]) != _ids(rebuilt["lexical"][keyed[0]])


def _ids(found: tuple[list, int]) -> tuple[list[tuple[str, float]], int]:  # type: ignore[type-arg]
    hits, total = found
    return [(h.chunk.id, h.score) for h in hits], total
