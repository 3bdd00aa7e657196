"""The one-line summary of ``codebase-mcp index`` counts in words that agree with the number."""

from __future__ import annotations

import io

from rich.console import Console

from codebase_mcp_search.core.models import IndexResult
from codebase_mcp_search.core.models.indexing import IndexStatus
from codebase_mcp_search.entrypoints.cli.code import print_index


def _summary(files: int, chunks: int) -> str:
    result = IndexResult(
        repository_id="r1",
        repository_name="demo",
        files_indexed=files,
        files_unchanged=0,
        files_deleted=0,
        chunks_created=chunks,
        chunks_embedded=chunks,
        embeddings_cached=0,
        duration_seconds=0.5,
        status=IndexStatus.SUCCESS,
    )
    out = io.StringIO()
    print_index(result, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_one_file_and_one_chunk_are_singular() -> None:
    text = _summary(1, 1)
    assert "1 file indexed" in text and "1 chunk written" in text
    assert "1 files" not in text and "1 chunks" not in text


def test_several_are_plural() -> None:
    text = _summary(3, 0)
    assert "3 files indexed" in text and "0 chunks written" in text
