"""Builders for test data shared by the suites."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codebase_mcp_search.adapters.workers import ThreadChunkingPool
from codebase_mcp_search.core.errors import Hint
from codebase_mcp_search.core.languages import language_for_path
from codebase_mcp_search.core.models import (
    Chunk,
    IndexResult,
    IndexStatus,
    Repository,
    SourceFile,
    chunk_id_for,
    sha256_hex,
)

THREADS = ThreadChunkingPool()
"""Where the tests' indexing services chunk (one thread), unless a test says otherwise."""


@dataclass(frozen=True)
class FileBatch:
    """An IndexedFile for ChunkStore.replace_files."""

    file: SourceFile
    text: str
    chunks: Sequence[Chunk]
    vectors: Sequence[Sequence[float] | None] | None = None


def symbol_of(piece: str) -> str | None:
    """Test data names a chunk after the first ``def``/``class`` it holds."""
    m = re.search(r"(?:def|class)\s+(\w+)", piece)
    return m.group(1) if m else None


def text_chunk(path: str, content: str) -> Chunk:
    """A one-piece chunk of repository ``r`` (its id and hash the path), for the benches'
    recorded-search tests."""
    return Chunk(
        id=path,
        repository_id="r",
        file_path=path,
        language=None,
        symbol=None,
        start_line=1,
        end_line=1 + content.count("\n"),
        content=content,
        content_hash=path,
        token_count=len(content.split()),
    )


def repo(repo_id: str = "r1", path: str = "/repos/r1", name: str = "r1") -> Repository:
    return Repository(id=repo_id, name=name, path=path)


def file_batch(
    repository_id: str,
    path: str,
    pieces: Sequence[str],
    vectors: Sequence[Sequence[float] | None] | None = None,
) -> FileBatch:
    """A file whose text is ``pieces`` joined by newlines, one chunk per piece."""
    text = "\n".join(pieces)
    chunks = []
    line = 1
    for piece in pieces:
        n = piece.count("\n") + 1
        h = sha256_hex(piece)
        chunks.append(
            Chunk(
                id=chunk_id_for(repository_id, path, line, line + n - 1, h),
                repository_id=repository_id,
                file_path=path,
                language=language_for_path(path),
                symbol=symbol_of(piece),
                kind="block",
                start_line=line,
                end_line=line + n - 1,
                content=piece,
                content_hash=h,
                token_count=len(piece.split()),
            )
        )
        line += n
    source = SourceFile(
        path=path, language=language_for_path(path), content_hash=sha256_hex(text), size=len(text)
    )
    return FileBatch(file=source, text=text, chunks=chunks, vectors=vectors)


def index_result(name: str = "r") -> IndexResult:
    """A successful indexing run's result (what a finished job carries)."""
    return IndexResult(
        repository_id="abc",
        repository_name=name,
        files_indexed=3,
        files_unchanged=0,
        files_deleted=0,
        chunks_created=7,
        chunks_embedded=7,
        embeddings_cached=0,
        duration_seconds=1.5,
        status=IndexStatus.SUCCESS,
    )


def write_sample_repo(root: Path) -> Path:
    """A two-file Python repository on disk: ``pkg/retry.py`` (``retry_with_backoff``, from
    line 4) and ``pkg/names.py`` (``slugify``)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "retry.py").write_text(
        "import time\n\n\ndef retry_with_backoff(fn, attempts=5):\n"
        '    """Call fn until it succeeds, sleeping twice as long after each failure."""\n'
        "    delay = 0.1\n    for _ in range(attempts):\n        try:\n            return fn()\n"
        "        except OSError:\n            time.sleep(delay)\n            delay *= 2\n"
        "    return fn()\n"
    )
    (root / "pkg" / "names.py").write_text(
        "def slugify(title):\n    return '-'.join(title.lower().split())\n"
    )
    return root


def needs_forced_reindex(error: BaseException) -> bool:
    """A ``ModelMismatch`` whose fix is a forced re-index under one model (``Hint.ONE_MODEL``;
    each interface says it in its own terms, see ``tests/unit/test_vector_compatibility.py``)."""
    return getattr(error, "hint", None) is Hint.ONE_MODEL


def needs_reindex(error: BaseException) -> bool:
    """A ``ModelMismatch`` of a repository without vectors, which a plain re-index fixes."""
    return getattr(error, "hint", None) is Hint.ADD_VECTORS
