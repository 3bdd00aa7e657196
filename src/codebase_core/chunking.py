"""The CPU step of indexing: files read from disk become chunks ready to store.

``chunk_files`` is pure work over strings (tree-sitter parsing and token counting, both
holding the GIL). Where it runs is a ``ChunkingPool``'s choice (see ``core.ports``):
``ThreadChunkingPool`` here, the default, runs it in one thread off the event loop; an adapter
may run it in worker processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codebase_mcp_search.core.models import Chunk, ScanEntry, SourceFile, chunk_id_for, sha256_hex

if TYPE_CHECKING:  # the ports name PreparedFile: import them only to type-check
    from codebase_mcp_search.core.ports import Chunker, TokenCounter


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A file ready to store: its snapshot text, chunks and (optionally) one vector per chunk."""

    file: SourceFile
    text: str
    chunks: Sequence[Chunk]
    vectors: Sequence[Sequence[float]] | None


def chunk_files(
    chunker: Chunker, tokens: TokenCounter, repo_id: str, texts: Sequence[tuple[ScanEntry, str]]
) -> list[PreparedFile]:
    """Chunks of each (entry, text), with ids, hashes and token counts (no vectors yet)."""
    out: list[PreparedFile] = []
    for entry, text in texts:
        chunks = []
        for d in chunker.chunk(entry.path, text, entry.language):
            h = sha256_hex(d.content)
            chunks.append(
                Chunk(
                    id=chunk_id_for(repo_id, entry.path, d.start_line, d.end_line, h),
                    repository_id=repo_id,
                    file_path=entry.path,
                    language=entry.language,
                    symbol=d.symbol,
                    kind=d.kind,
                    start_line=d.start_line,
                    end_line=d.end_line,
                    content=d.content,
                    content_hash=h,
                    token_count=(
                        d.token_count if d.token_count is not None else tokens.count(d.content)
                    ),
                )
            )
        source = SourceFile(
            path=entry.path,
            language=entry.language,
            content_hash=entry.content_hash,
            size=entry.size,
        )
        out.append(PreparedFile(file=source, text=text, chunks=chunks, vectors=None))
    return out


class ThreadChunkingPool:
    """The default ``ChunkingPool``: chunks in a thread of this process, one core at most
    (``workers`` is ignored: threads would only take turns holding the GIL)."""

    def start(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> ThreadChunking:
        return ThreadChunking(chunker, tokens)


class ThreadChunking:
    """A ``ChunkingRun`` in threads: ``chunk_files`` off the event loop, nothing to shut down."""

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
