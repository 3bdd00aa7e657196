"""The memory store's vectors as one matrix, searched exactly (numpy cosine, exact top-k)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codebase_mcp_search.core.models import Chunk, ScoredChunk, SearchFilters
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """Unit vectors by chunk id, stacked once (rebuilt by the store after a write)."""

    ids: list[str]
    matrix: Matrix

    @classmethod
    def of(cls, vectors: Mapping[str, Matrix]) -> VectorIndex:
        ids = list(vectors)
        if not ids:
            return cls(ids=[], matrix=np.zeros((0, 0), dtype=np.float32))
        return cls(ids=ids, matrix=np.vstack([vectors[i] for i in ids]))

    def search(
        self,
        chunks: Mapping[str, Chunk],
        vector: Sequence[float],
        filters: SearchFilters,
        limit: int,
    ) -> tuple[list[ScoredChunk], int]:
        """The top ``limit`` chunks passing ``filters`` by cosine to ``vector``, and how many
        pass them (see ``ChunkRetrieval.vector_search``)."""
        if not self.ids:
            return [], 0
        held = HeldVectors(model=None, dimension=int(self.matrix.shape[1]))
        check_one_model(held, None, len(vector))
        if filters == SearchFilters():
            keep = np.arange(len(self.ids))
        else:
            keep = np.array(
                [i for i, cid in enumerate(self.ids) if filters.matches(chunks[cid])],
                dtype=np.int64,
            )
        if keep.size == 0:
            return [], 0
        scores = self.matrix[keep] @ unit(vector)
        if keep.size > limit:
            # Exact top-k: everything scoring at least the k-th best (ties included) is sorted.
            kth = np.partition(scores, keep.size - limit)[keep.size - limit]
            chosen = np.flatnonzero(scores >= kth)
        else:
            chosen = np.arange(keep.size)
        ranked = top([(chunks[self.ids[keep[j]]], float(scores[j])) for j in chosen], limit)
        return ranked, int(keep.size)


def unit(vector: Sequence[float] | Matrix) -> Matrix:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def top(scored: list[tuple[Chunk, float]], limit: int) -> list[ScoredChunk]:
    """The best ``limit``, ties by path, line and repository."""
    scored.sort(key=lambda cs: ScoredChunk.order_of(*cs))
    return [ScoredChunk.of(c, s) for c, s in scored[:limit]]
