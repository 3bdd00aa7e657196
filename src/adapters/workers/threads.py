"""ThreadChunkingPool: a ``ChunkingPool`` of one thread of this process."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from codebase_mcp_search.core.chunking import chunk_files
from codebase_mcp_search.core.models import PreparedFile, ScanEntry
from codebase_mcp_search.core.ports import Chunker, TokenCounter


class ThreadChunkingPool:
    """Chunks in a thread of this process, one core at most (``workers`` is not used: threads
    would only take turns holding the GIL)."""

    def start(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> ThreadChunkingRun:
        return ThreadChunkingRun(chunker, tokens)

    def prestart(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> None:
        return None  # a thread costs nothing to start

    async def close(self) -> None:
        return None


class ThreadChunkingRun:
    """``chunk_files`` off the event loop (``asyncio.to_thread``); nothing to shut down."""

    def __init__(self, chunker: Chunker, tokens: TokenCounter) -> None:
        self._chunker, self._tokens = chunker, tokens

    async def chunk(
        self, repository_id: str, texts: Sequence[tuple[ScanEntry, str]]
    ) -> list[PreparedFile]:
        return await asyncio.to_thread(
            chunk_files, self._chunker, self._tokens, repository_id, texts
        )

    async def close(self) -> None:
        return None
