"""The chunking ports: ``Chunker`` and ``TokenCounter`` (pure CPU work over a string, so
synchronous: a coroutine would only add scheduling per file), and ``ChunkingPool`` /
``ChunkingRun``, where that work runs (a thread, or worker processes: adapters only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models import ChunkDraft, PreparedFile, ScanEntry


@runtime_checkable
class Chunker(Protocol):
    """Cuts a file's text into chunks.

    Contract: every non-blank line of ``text`` lies in at least one returned chunk; each chunk's
    lines are 1-based, inclusive, ``start_line <= end_line``, within the file, and its
    ``content`` is exactly those lines joined by newlines; chunks are ordered by start line.
    It never raises on arbitrary text (unparseable code falls back to line windows).
    """

    def chunk(self, path: str, text: str, language: str | None) -> list[ChunkDraft]:
        """Chunks of one file."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts model tokens in text; never raises on any string."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


@runtime_checkable
class ChunkingPool(Protocol):
    """Where an indexing run chunks its files: a thread of this process, or worker processes.

    Chunking is CPU-bound Python that holds the GIL: more threads would not make it faster,
    other processes do. Starting them costs more than chunking a few files, so the indexing
    service asks for more than one worker only when many files changed, after it holds the
    repository's lock.

    Contract:
    - ``start`` returns at once a ``ChunkingRun`` chunking with ``chunker`` and ``tokens``.
      With ``workers == 1`` it chunks in one thread of this process, off the event loop;
      with more, an adapter may use up to ``workers`` worker processes (the chunker and token
      counter must then be picklable), starting them now so that their start-up overlaps the
      caller reading the first files.
    """

    def start(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> ChunkingRun:
        """Workers for one run; the caller must ``close`` it."""
        ...

    def prestart(self, workers: int, chunker: Chunker, tokens: TokenCounter) -> None:
        """Start the workers of a run to come now (their start-up then overlaps the caller's
        wait, for the store say); the next ``start`` with the same arguments takes them.
        An adapter without start-up costs does nothing."""
        ...

    async def close(self) -> None:
        """End workers started ahead that no run took."""
        ...


@runtime_checkable
class ChunkingRun(Protocol):
    """The workers of one indexing run (see ``ChunkingPool``).

    Contract: ``chunk`` returns exactly what ``core.chunking.chunk_files`` returns for
    the same arguments and the run's chunker and token counter, in order; several calls may be
    in flight at once (up to one per worker run in parallel); a worker lost on the way (killed,
    out of memory) does not fail it (the batch is chunked in the caller's process instead).
    ``close`` ends the workers: work of cancelled ``chunk`` calls that no worker has begun is
    dropped, work begun is waited for. It is called once, after every ``chunk`` call ended.
    """

    async def chunk(
        self, repository_id: str, texts: Sequence[tuple[ScanEntry, str]]
    ) -> list[PreparedFile]:
        """``chunk_files`` of (entry, decoded text) pairs, run by a worker."""
        ...

    async def close(self) -> None:
        """End the run's workers (see class doc)."""
        ...
