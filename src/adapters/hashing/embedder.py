"""HashingEmbedder: feature hashing of code tokens into a fixed-size vector (no model)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Sequence

from codebase_core import lexical
from codebase_core.errors import ValidationFailed


@functools.lru_cache(maxsize=262_144)
def _slot(feature: str, dimension: int) -> tuple[int, float]:
    # blake2b, not hash(): the same text must map to the same vector in every process.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dimension, (1.0 if digest[4] & 1 else -1.0)


class HashingEmbedder:
    """Signed feature hashing of analysed code tokens and token bigrams; deterministic.

    It captures shared vocabulary, not meaning: it exists for tests and as an explicit opt-in
    (``CODEBASE_MCP_EMBEDDER=hash``), and is never chosen automatically as "semantic".
    """

    def __init__(self, dimension: int = 384) -> None:
        if dimension < 8:
            raise ValidationFailed("dimension", dimension, "must be at least 8")
        self._dimension = dimension

    @property
    def model(self) -> str:
        return f"hash-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _vector(self, text: str) -> list[float]:
        terms = lexical.analyse(text)
        features = Counter(terms)
        features.update(f"{a} {b}" for a, b in itertools.pairwise(terms))
        vec = [0.0] * self._dimension
        for feature, tf in features.items():
            bucket, sign = _slot(feature, self._dimension)
            vec[bucket] += sign * (1.0 + math.log(tf))
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm > 0 else vec

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
