"""ChunkRetrieval contract, lexical retrieval with stem groups (``StemGroup``: a query word's
other forms scored as one more term) against a reference computed from scratch: every store
adapter passes it, Postgres also reading its terms packed."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from codebase_mcp_search.core import lexical, stems
from codebase_mcp_search.core.models import SearchFilters, StemGroup
from codebase_mcp_search.core.ports import ChunkStore
from tests.contract.store_data import NO_FILTER
from tests.contract.test_chunk_retrieval_lexical import CORPUS, chunk_store
from tests.factories import file_batch, repo, symbol_of

__all__ = ["chunk_store"]  # the fixture, over every store

Key = tuple[str, str]


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _reference(
    docs: dict[Key, Counter[str]], terms: list[str], groups: list[StemGroup]
) -> dict[Key, float]:
    """BM25 with stem groups, from the definition (``StemGroup``), independently of any
    adapter: each group one term whose frequency in a chunk is its held forms' summed, whose
    document frequency is theirs summed (at most the number of chunks), whose idf is the
    group's weight times that frequency's."""
    n = len(docs)
    avg = sum(sum(d.values()) for d in docs.values()) / n
    lists: list[tuple[dict[Key, int], float]] = []
    for t in dict.fromkeys(terms):
        tfs = {k: d[t] for k, d in docs.items() if d.get(t)}
        if tfs:
            lists.append((tfs, _idf(n, len(tfs))))
    for group in groups:
        held = [f for f in dict.fromkeys(group.terms) if any(d.get(f) for d in docs.values())]
        if not held:
            continue
        tfs = {k: sum(d.get(f, 0) for f in held) for k, d in docs.items()}
        df = min(n, sum(sum(1 for d in docs.values() if d.get(f)) for f in held))
        lists.append(({k: v for k, v in tfs.items() if v}, group.weight * _idf(n, df)))
    out: dict[Key, float] = {}
    for tfs, w in lists:
        for key, tf in tfs.items():
            length = sum(docs[key].values())
            out[key] = out.get(key, 0.0) + w * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
    bound = sum(w * 2.2 for _, w in lists)
    return {k: v / bound for k, v in out.items()}


def _docs() -> dict[Key, Counter[str]]:
    return {
        (path, piece): lexical.document_terms(piece, path, symbol_of(piece))
        for path, pieces in CORPUS.items()
        for piece in pieces
    }


async def _indexed(store: ChunkStore) -> None:
    await store.save_repository(repo())
    await store.replace_files(
        "r1", [file_batch("r1", path, pieces) for path, pieces in CORPUS.items()]
    )


@pytest.mark.parametrize(
    "query", ["parsing configs", "loaded configuration", "retrying attempt", "serving requests"]
)
@pytest.mark.parametrize("weight", [0.5, 1.25])
async def test_stem_groups_score_as_their_definition(
    chunk_store: ChunkStore, query: str, weight: float
) -> None:
    await _indexed(chunk_store)
    terms = lexical.query_terms(query)
    groups = [StemGroup(forms, weight) for forms in stems.groups(terms)]
    expected = _reference(_docs(), terms, groups)
    hits, total = await chunk_store.lexical_search(terms, NO_FILTER, 10, groups)
    assert total == len(expected)
    want = sorted(expected.values(), reverse=True)[:10]
    assert [round(h.score, 9) for h in hits] == [round(v, 9) for v in want]
    for h in hits:
        assert h.score == pytest.approx(expected[(h.chunk.file_path, h.chunk.content)], abs=1e-9)


async def test_a_chunk_holding_only_another_form_is_found(chunk_store: ChunkStore) -> None:
    """ "parsing" is in no chunk: without groups nothing matches; with them every chunk
    holding "parse" or "parsed" does, "parse_config" among the first."""
    await _indexed(chunk_store)
    terms = lexical.query_terms("parsing")
    assert await chunk_store.lexical_search(terms, NO_FILTER, 10) == ([], 0)
    groups = [StemGroup(forms, 1.0) for forms in stems.groups(terms)]
    hits, total = await chunk_store.lexical_search(terms, NO_FILTER, 10, groups)
    holding = [k for k, d in _docs().items() if d.get("parse") or d.get("parsed")]
    assert total == len(holding) == len(hits) >= 4
    assert {(h.chunk.file_path, h.chunk.content) for h in hits} == set(holding)


async def test_without_groups_or_with_none_held_the_search_is_unchanged(
    chunk_store: ChunkStore,
) -> None:
    await _indexed(chunk_store)
    terms = lexical.query_terms("parse config json")
    plain = await chunk_store.lexical_search(terms, NO_FILTER, 10)
    assert await chunk_store.lexical_search(terms, NO_FILTER, 10, ()) == plain
    absent = [StemGroup(("zebra", "zebras", "zebraed"), 1.25)]
    assert await chunk_store.lexical_search(terms, NO_FILTER, 10, absent) == plain


async def test_filters_cut_the_matches_not_the_scores(chunk_store: ChunkStore) -> None:
    await _indexed(chunk_store)
    terms = lexical.query_terms("parsing json")
    groups = [StemGroup(forms, 1.25) for forms in stems.groups(terms)]
    everywhere, _ = await chunk_store.lexical_search(terms, NO_FILTER, 20, groups)
    by_key = {(h.chunk.file_path, h.chunk.content): h.score for h in everywhere}
    hits, total = await chunk_store.lexical_search(
        terms, SearchFilters(directory="pkg/http"), 10, groups
    )
    assert total == len(hits) == 1
    assert hits[0].chunk.file_path == "pkg/http/server.py"
    assert hits[0].score == by_key[(hits[0].chunk.file_path, hits[0].chunk.content)]
    # A filter that excludes every holder of a group's forms leaves it in the bound: the
    # scores of the chunks it keeps are those of the unfiltered search.
    only_readme, total = await chunk_store.lexical_search(
        terms, SearchFilters(file_type="md"), 10, groups
    )
    assert total == len(only_readme) == 1
    assert only_readme[0].score == by_key[("README.md", CORPUS["README.md"][0])]


async def test_a_group_of_one_form_weighs_its_term_once_more(chunk_store: ChunkStore) -> None:
    """A group holding only ``t`` is ``t`` again at ``weight`` times its idf: every chunk's
    raw BM25 is (1 + weight) times its own, and so is the bound: the scores are unchanged."""
    await _indexed(chunk_store)
    alone, total = await chunk_store.lexical_search(["retry"], NO_FILTER, 10)
    again, total_again = await chunk_store.lexical_search(
        ["retry"], NO_FILTER, 10, [StemGroup(("retry",), 0.75)]
    )
    assert total == total_again
    assert [(h.chunk.id, round(h.score, 9)) for h in again] == [
        (h.chunk.id, round(h.score, 9)) for h in alone
    ]
