"""The CPU step of indexing: files read from disk become chunks ready to store.

``chunk_files`` is pure work over strings (tree-sitter parsing and token counting, both
holding the GIL). Where it runs, a thread or worker processes, is a ``ChunkingPool``'s choice
(an adapter: ``adapters.workers``); the core starts no thread of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from codebase_mcp_search.core.models import (
    Chunk,
    PreparedFile,
    ScanEntry,
    SourceFile,
    chunk_id_for,
    sha256_hex,
)
from codebase_mcp_search.core.ports import Chunker, TokenCounter


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
