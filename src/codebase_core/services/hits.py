"""From ranked chunks to the hits a search returns: near-duplicates collapsed, identical text
merged into one hit with its other locations, context lines read from the indexed snapshot,
and hits whose file changed on disk marked ``stale``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from codebase_mcp_search.core.errors import RepositoryNotFound
from codebase_mcp_search.core.models import (
    Chunk,
    Location,
    Repository,
    ScoredChunk,
    SearchHit,
)
from codebase_mcp_search.core.ports import SearchStore, SourceTree
from codebase_mcp_search.core.services.concurrency import together

# Two hits of one file whose line ranges share at least this fraction of the shorter range are
# "mostly the same lines"; the lower-ranked one is dropped.
OVERLAP_DROP = 0.5


def _overlap_fraction(a: Chunk, b: Chunk) -> float:
    shared = min(a.end_line, b.end_line) - max(a.start_line, b.start_line) + 1
    if shared <= 0:
        return 0.0
    shorter = min(a.end_line - a.start_line, b.end_line - b.start_line) + 1
    return shared / shorter


def collapse(ranked: Sequence[ScoredChunk], limit: int) -> list[tuple[ScoredChunk, list[Location]]]:
    """Drop near-duplicate ranges of one file; merge identical text found in several files."""
    kept: list[tuple[ScoredChunk, list[Location]]] = []
    by_hash: dict[str, list[Location]] = {}
    by_file: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    for sc in ranked:
        c = sc.chunk
        same_text = by_hash.get(c.content_hash)
        if same_text is not None:
            same_text.append(
                Location(
                    repository_id=c.repository_id,
                    file_path=c.file_path,
                    start_line=c.start_line,
                    end_line=c.end_line,
                )
            )
            continue
        if len(kept) >= limit:
            continue
        file_key = (c.repository_id, c.file_path)
        if any(_overlap_fraction(c, o) >= OVERLAP_DROP for o in by_file[file_key]):
            continue
        others: list[Location] = []
        by_hash[c.content_hash] = others
        by_file[file_key].append(c)
        kept.append((sc, others))
    return kept


def extended(first: Sequence[ScoredChunk], deeper: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """``first``, then the chunks of ``deeper`` it lacks, each scored at most ``first``'s
    lowest so the list stays in score order. Text identical to a chunk of ``first`` is left
    out: it would only add a location to a hit that a smaller limit shows without it."""
    ids = {s.chunk.id for s in first}
    texts = {s.chunk.content_hash for s in first}
    floor = min((s.score for s in first), default=1.0)
    rest = [
        ScoredChunk(s.chunk, min(s.score, floor))
        for s in deeper
        if s.chunk.id not in ids and s.chunk.content_hash not in texts
    ]
    return [*first, *rest]


async def build_hits(
    store: SearchStore,
    source: SourceTree | None,
    kept: Sequence[tuple[ScoredChunk, list[Location]]],
    repositories: Mapping[str, Repository] | None = None,
) -> list[SearchHit]:
    """The hits of ``kept`` (see ``collapse``), with context from the indexed text of each
    file and ``stale`` set where ``source`` finds the file changed on disk. ``repositories``:
    those the search listed already, by id (others are read from the store)."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for sc, _ in kept:
        wanted[sc.chunk.repository_id].add(sc.chunk.file_path)
    if not kept:
        return []
    # The hits' context and the stale check at once (a pooled store answers on two
    # connections).
    contexts, stale = await together(
        store.hit_contexts([sc.chunk for sc, _ in kept]),
        _stale(store, source, wanted, repositories or {}),
    )
    hits: list[SearchHit] = []
    for sc, others in kept:
        c = sc.chunk
        before, after = contexts.get(c.id, ("", ""))
        hits.append(
            SearchHit(
                chunk_id=c.id,
                repository_id=c.repository_id,
                file_path=c.file_path,
                language=c.language,
                symbol=c.symbol,
                kind=c.kind,
                start_line=c.start_line,
                end_line=c.end_line,
                content=c.content,
                similarity_score=sc.score,
                context_before=before,
                context_after=after,
                other_locations=others,
                stale=(c.repository_id, c.file_path) in stale,
            )
        )
    return hits


async def _stale(
    store: SearchStore,
    source: SourceTree | None,
    wanted: Mapping[str, set[str]],
    repositories: Mapping[str, Repository],
) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for repo_id, paths in wanted.items():
        changed = await _changed_on_disk(store, source, repo_id, paths, repositories.get(repo_id))
        out.update((repo_id, p) for p in changed)
    return out


async def _changed_on_disk(
    store: SearchStore,
    source: SourceTree | None,
    repo_id: str,
    paths: set[str],
    known: Repository | None,
) -> set[str]:
    """The files of ``paths`` changed on disk since they were indexed: a stat of each, then
    the indexed hashes of the few touched since (usually none) compared with their bytes."""
    if source is None:
        return set()
    try:
        repo = known or await store.get_repository(repo_id)
    except RepositoryNotFound:  # deleted while this search ran
        return set(paths)
    touched = await source.touched(repo.path, paths, repo.indexed_at)
    if not touched:
        return set()
    indexed = await store.file_hashes(repo_id, sorted(touched))
    # Known touched: compared by their bytes, not stat'ed again against the time.
    return await source.changed(repo.path, indexed, None)
