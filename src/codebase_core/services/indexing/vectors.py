"""A run of the semantic layer: the chunks of a repository still without a vector get one,
batch by batch, oldest first. Each batch is stored in one step before the next is embedded, so
an interrupted run (a kill, a cancel, a lost database) loses at most the batch in flight, and
the next run embeds only what is still missing. It holds the repository's vectors lock, never
its indexing lock: a lexical run (an edit) goes on beside it, and the chunks it writes are
taken up by this run's later batches, or by the next run."""

from __future__ import annotations

import time
from dataclasses import dataclass

from codebase_mcp_search.core.models import Repository, VectorResult
from codebase_mcp_search.core.ports import Embedder, IndexStore
from codebase_mcp_search.core.services.indexing.embedding import vectors_for
from codebase_mcp_search.core.services.indexing.progress import (
    CancellationToken,
    ProgressCallback,
    RunCounts,
    report,
)


@dataclass(frozen=True, slots=True)
class VectorRun:
    """What one run of the semantic layer needs."""

    store: IndexStore
    embedder: Embedder
    batch_chunks: int


async def build_vectors(
    run: VectorRun,
    repository: Repository,
    *,
    progress: ProgressCallback | None,
    cancel: CancellationToken,
    counts: RunCounts,
) -> VectorResult:
    """Give every chunk of ``repository`` without a vector its vector (see the module doc);
    progress is phase ``embedding``: vectors stored of those missing when it began (the total
    grows when a lexical run writes more meanwhile)."""
    started = time.perf_counter()
    store = run.store
    counts.to_embed = repository.vectors_missing
    await report(progress, "embedding", 0, counts.to_embed)
    seen: set[str] = set()
    while True:
        cancel.raise_if_cancelled()
        batch = await store.vector_backlog(repository.id, run.batch_chunks)
        # A chunk offered again was stored by nobody (its vector was refused or it was
        # replaced between reading and storing): the backlog is done when only those remain.
        batch = [c for c in batch if c.id not in seen]
        if not batch:
            break
        seen.update(c.id for c in batch)
        vectors, embedded, truncated = await vectors_for(store, run.embedder, batch)
        stored = await store.set_vectors(repository.id, vectors)
        counts.embedded += embedded
        counts.cached += len(batch) - embedded
        counts.truncated += truncated
        counts.vectors_stored += stored
        counts.to_embed = max(counts.to_embed, counts.vectors_stored)
        await report(progress, "embedding", counts.vectors_stored, counts.to_embed)
    await report(progress, "optimizing", 0, 1)
    await store.optimize()
    after = await store.get_repository(repository.id)
    await report(progress, "done", counts.vectors_stored, counts.to_embed)
    return VectorResult(
        repository_id=repository.id,
        repository_name=after.name,
        chunks_embedded=counts.embedded,
        embeddings_cached=counts.cached,
        chunks_truncated=counts.truncated,
        vectors_missing=after.vectors_missing,
        duration_seconds=round(time.perf_counter() - started, 3),
    )
