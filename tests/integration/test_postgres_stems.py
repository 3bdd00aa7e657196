"""Postgres lexical search with stem groups (``models.StemGroup``): the top chunks, scores and
count of a reference computed from scratch over the chunks (each group one more term: its terms'
frequencies summed per chunk, its document frequency theirs summed), with and without filters;
from the blocks, from packed terms (corrected by writes since their build), and from the postings
held in the process, the groups' terms held as any term and merged for each search alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from codebase_mcp_search.adapters.postgres import PgCaches, PgChunkStore, PgDatabase
from codebase_mcp_search.adapters.postgres.chunk_store import lexical_search
from codebase_mcp_search.adapters.postgres.chunk_store.lexical_search import LexicalSearch
from codebase_mcp_search.adapters.postgres.chunk_store.packing import PackConfig
from codebase_mcp_search.adapters.postgres.chunk_store.postings_cache import HeldPostings
from codebase_mcp_search.adapters.postgres.chunk_store.rows import term_key
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import (
    Chunk,
    IndexRequest,
    ScoredChunk,
    SearchFilters,
    StemGroup,
)
from tests.factories import file_batch, repo
from tests.integration.pg_helpers import (
    NO_FILTER,
    core_sources,
    indexing_service,
    listening,
    statements,
)

# Query words and their groups, in the analyser's forms: groups of several held terms, one
# holding a query term too (counted twice), one of terms no chunk holds (adds nothing).
SEARCHES: tuple[tuple[str, tuple[StemGroup, ...]], ...] = (
    (
        "parse task status",
        (
            StemGroup(("parser", "parsing", "parsed"), 0.5),
            StemGroup(("task", "tasked", "tasking"), 0.35),
            StemGroup(("zzstatusy", "zzstatusier"), 0.5),
        ),
    ),
    (
        "cancellation token",
        (
            StemGroup(("cancel", "cancelled", "cancelling", "cancellation"), 0.6),
            StemGroup(("tokenize", "tokenizer", "tokenized"), 0.4),
        ),
    ),
    ("BM25 upper bound", (StemGroup(("bounded", "bounding"), 0.5),)),
    ("", (StemGroup(("parser", "parsing"), 0.5), StemGroup(("index", "indexed"), 0.3))),
    ("repository chunk", ()),
)
FILTERS = (NO_FILTER, SearchFilters(directory="services"), SearchFilters(file_type="py"))
# Every term of two postings or more packed; never packed again by a test's writes.
PACKED = PackConfig(min_docs=1, min_df=2, rebuild_min=10**9, rebuild_share=1e9)

Top = tuple[list[tuple[str, int]], list[float], int]


def reference(
    chunks: Sequence[Chunk],
    terms: Sequence[str],
    stems: Sequence[StemGroup],
    flt: SearchFilters,
    limit: int,
) -> Top:
    """The top ``limit`` (path and line, scores) and the count, from scratch."""
    docs = {c.id: lexical.document_terms(c.content, c.file_path, c.symbol) for c in chunks}
    lens = {cid: sum(tf.values()) for cid, tf in docs.items()}
    n_docs = len(docs)
    avg = sum(lens.values()) / n_docs
    postings: dict[str, dict[str, int]] = {}
    for cid, tf in docs.items():
        for t, f in tf.items():
            postings.setdefault(t, {})[cid] = f
    lists = [
        (postings[t], lexical.idf(n_docs, len(postings[t])))
        for t in dict.fromkeys(terms)
        if t in postings
    ]
    for group in stems:
        held = [postings[t] for t in dict.fromkeys(group.terms) if t in postings]
        if not held:
            continue
        merged: Counter[str] = Counter()
        for p in held:
            merged.update(p)
        df = min(n_docs, sum(len(p) for p in held))
        lists.append((dict(merged), group.weight * lexical.idf(n_docs, df)))
    raw: dict[str, float] = {}
    for p, idf in lists:
        for cid, f in p.items():
            raw[cid] = raw.get(cid, 0.0) + lexical.term_score(f, lens[cid], avg, idf)
    bound = lexical.upper_bound(idf for _, idf in lists)
    by_id = {c.id: c for c in chunks}
    matched = [
        (by_id[cid], lexical.normalised(r, bound))
        for cid, r in raw.items()
        if flt.matches(by_id[cid])
    ]
    matched.sort(key=lambda cs: (-cs[1], cs[0].file_path, cs[0].start_line))
    top = matched[:limit]
    return [(c.file_path, c.start_line) for c, _ in top], [s for _, s in top], len(matched)


def _top(found: tuple[list[ScoredChunk], int]) -> Top:
    hits, total = found
    return [(h.chunk.file_path, h.chunk.start_line) for h in hits], [h.score for h in hits], total


async def _all_chunks(store: PgChunkStore) -> list[Chunk]:
    return [c for r in await store.list_repositories() for c in await store.chunks(r.id)]


async def _same_as_reference(
    store: PgChunkStore, filters: Sequence[SearchFilters] = FILTERS, limit: int = 10
) -> None:
    chunks = await _all_chunks(store)
    grew = False
    for words, stems in SEARCHES:
        terms = lexical.query_terms(words) if words else []
        for flt in filters:
            want = reference(chunks, terms, stems, flt, limit)
            got = _top(await store.lexical_search(terms, flt, limit, stems))
            assert got[0] == want[0], (words, flt)
            assert got[1] == pytest.approx(want[1], abs=1e-9), (words, flt)
            assert got[2] == want[2], (words, flt)
            grew |= want[2] > reference(chunks, terms, (), flt, limit)[2]
    assert grew  # some group's terms matched chunks the query's did not


@pytest.mark.parametrize("threaded", [False, True])
async def test_stems_rank_as_the_reference_from_the_blocks(
    db: PgDatabase, project: str, threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threaded:  # decoded and summed in a worker thread, as very many postings are
        monkeypatch.setattr(lexical_search, "THREAD_POSTINGS", 0)
    store = PgChunkStore(db, project, caches=PgCaches.off())
    await indexing_service(store, core_sources()).index(IndexRequest(root="/repo"))
    await _same_as_reference(store)


async def test_without_stems_the_search_is_today_s(
    db: PgDatabase, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgChunkStore(db, project, caches=PgCaches.off())
    await indexing_service(store, core_sources()).index(IndexRequest(root="/repo"))
    terms = lexical.query_terms("parse task status")
    want = [_top(await store.lexical_search(terms, flt, 10)) for flt in FILTERS]

    def never(*args: object) -> None:
        raise AssertionError("the groups' path taken without groups")

    monkeypatch.setattr(lexical_search, "stem_score", never)
    for stems in ((), (StemGroup((), 0.5),)):  # a group without terms is none
        got = [_top(await store.lexical_search(terms, flt, 10, stems)) for flt in FILTERS]
        assert got == want


async def test_a_group_a_filter_leaves_without_postings_still_counts_in_the_bound(
    db: PgDatabase, project: str
) -> None:
    store = PgChunkStore(db, project, caches=PgCaches.off())
    await store.save_repository(repo("r1"))
    await store.replace_files(
        "r1",
        [
            file_batch("r1", "a/x.py", ["def x():\n    return 'parser parsing parser'"]),
            file_batch("r1", "b/y.py", ["def y():\n    return 'parse once'"]),
            file_batch("r1", "b/z.py", ["def z():\n    return 'nothing else'"]),
        ],
    )
    stems = (StemGroup(("parser", "parsing"), 0.5), StemGroup(("zzunheld",), 0.5))
    chunks = await _all_chunks(store)
    for flt in (NO_FILTER, SearchFilters(directory="b"), SearchFilters(directory="a")):
        for terms in (["parse"], []):
            want = reference(chunks, terms, stems, flt, 10)
            got = _top(await store.lexical_search(terms, flt, 10, stems))
            assert got[0] == want[0] and got[2] == want[2], (flt, terms)
            assert got[1] == pytest.approx(want[1], abs=1e-9), (flt, terms)
    # Filtered to b: the group holds no posting there, yet its idf bounds the score.
    hits, total = await store.lexical_search(["parse"], SearchFilters(directory="b"), 10, stems)
    assert total == 1 and hits[0].score < 1.0
    alone, _ = await store.lexical_search(["parse"], SearchFilters(directory="b"), 10)
    assert hits[0].score < alone[0].score


async def _packed(store: PgChunkStore, terms: Sequence[str]) -> list[int]:
    """The term keys among ``terms`` that the store's statement reads packed."""
    reader = LexicalSearch(store._session, store._chunks)
    row, _ = await reader.read([term_key(t) for t in terms])
    assert row is not None
    return [] if row["p_terms"] is None else [int(k) for k in row["p_terms"]]


@pytest.mark.usefixtures("no_trust_window")
@pytest.mark.parametrize("caches", ["on", "off"])
async def test_stems_of_packed_terms_rank_as_the_reference(
    db: PgDatabase, project: str, caches: str
) -> None:
    kept = PgCaches() if caches == "on" else PgCaches.off()
    store = PgChunkStore(db, project, caches=kept, packing=PACKED)
    files = core_sources()
    await indexing_service(store, files).index(IndexRequest(root="/repo"))
    if caches == "on":  # unfiltered searches from the postings held (packed terms among them)
        await listening(store)
    group_terms = [t for _, stems in SEARCHES for g in stems for t in g.terms]
    assert await _packed(store, group_terms)  # groups' terms read packed
    await _same_as_reference(store)
    # Writes since the build: the packed terms corrected by them.
    paths = sorted(files)
    edited = {p: files[p].replace("parse", "parsing").replace("task", "tasks") for p in paths[:6]}
    edited.update({f"new/{i}.py": files[p] for i, p in enumerate(paths[6:12])})
    for p in paths[12:16]:
        edited[p] = ""  # emptied: its chunks deleted
    await indexing_service(store, {**files, **edited}).index(IndexRequest(root="/repo"))
    assert await _packed(store, group_terms)  # still read packed, corrected
    await _same_as_reference(store)


def held_postings(store: PgChunkStore) -> HeldPostings:
    lexical = store._lexical
    assert isinstance(lexical, HeldPostings)
    return lexical


@pytest.mark.usefixtures("no_trust_window")
@pytest.mark.parametrize("threaded", [False, True])
async def test_stems_from_held_postings_rank_as_the_reference(
    db: PgDatabase, project: str, threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threaded:
        monkeypatch.setattr(lexical_search, "THREAD_POSTINGS", 0)
    store = PgChunkStore(db, project)
    await indexing_service(store, core_sources()).index(IndexRequest(root="/repo"))
    await listening(store)
    for _rounds in range(2):  # the terms read, then held
        await _same_as_reference(store, (NO_FILTER,))
    held = held_postings(store)
    assert held.state is not None
    # Every group's terms held as terms (under their keys), no merged term.
    kept = held.postings.held(held.state.token, [term_key("parser"), term_key("parsing")])
    assert len(kept) == 2
    assert all(-(2**63) <= k < 2**63 for k in held.postings._terms)
    seen = statements(db, monkeypatch)
    for words, stems in SEARCHES:
        terms = lexical.query_terms(words) if words else []
        await store.lexical_search(terms, NO_FILTER, 10, stems)
    assert seen == []  # every term of every group held, every chosen chunk held
    # A filtered search is the plain one's, with its groups.
    await _same_as_reference(store, FILTERS[1:])
