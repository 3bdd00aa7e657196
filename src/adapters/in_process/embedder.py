"""InProcessEmbedder: the ``Embedder`` methods of a model run in this process, in a worker
thread (loading and encoding are seconds of CPU that would hold the event loop)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.models import Embeddings

log = logging.getLogger("codebase_mcp")


class InProcessEmbedder:
    """Loads once (``open``, behind a lock), then encodes in a worker thread. A subclass sets
    ``model``, and implements ``_load`` (sets ``_dimension``, ``_max_tokens``, and makes
    ``_loaded`` true) and ``_encode(texts, kind)`` (``kind``: ``document`` or ``query``)."""

    def __init__(self) -> None:
        self._dimension = 0
        self._max_tokens = 0
        self._load_lock = asyncio.Lock()

    @property
    def model(self) -> str:
        raise NotImplementedError

    @property
    def _loaded(self) -> bool:
        raise NotImplementedError

    def _load(self) -> None:
        raise NotImplementedError

    def _encode(self, texts: list[str], kind: str) -> Embeddings:
        raise NotImplementedError

    @property
    def dimension(self) -> int:
        if not self._loaded:
            raise EmbedderUnavailable(f"{self.model} is not loaded yet: open() the embedder first")
        return self._dimension

    async def open(self) -> None:
        """Load the model (seconds). Raises ``EmbedderUnavailable``."""
        async with self._load_lock:
            if not self._loaded:
                await asyncio.to_thread(self._load)

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return Embeddings(vectors=[])
        await self.open()
        return await asyncio.to_thread(self._encode, list(texts), "document")

    async def embed_query(self, text: str) -> list[float]:
        await self.open()
        return list((await asyncio.to_thread(self._encode, [text], "query")).vectors[0])

    def _log_truncated(self, truncated: int, total: int) -> None:
        """Texts longer than the model takes, embedded from their beginning. Per batch, so
        debug: the indexing result counts them, and the CLI says so once."""
        if truncated:
            log.debug(
                "%d of %d texts exceed %d tokens: %s embeds their beginning",
                truncated,
                total,
                self._max_tokens,
                self.model,
            )
