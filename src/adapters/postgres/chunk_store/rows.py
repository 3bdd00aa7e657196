"""The chunk store's rows: the columns of a chunk, the COPY records of a write, its postings
blocks, and chunks read back. Building a write's rows is pure CPU work (the store runs it in a
thread), so it is tested without a database."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import (
    CONTEXT_LINES,
    Chunk,
    context_lines,
    file_extension,
    split_lines,
)
from codebase_mcp_search.core.ports import IndexedFile

FILE_COLUMNS = ("repo_id", "path", "language", "content_hash", "size", "body")
CHUNK_COLUMNS = (
    "seq",
    "id",
    "repo_id",
    "file_path",
    "file_ext",
    "language",
    "symbol",
    "kind",
    "start_line",
    "end_line",
    "content",
    "content_hash",
    "token_count",
    "doc_len",
    "terms",
    "embedding",
)
CONTEXT_COLUMNS = ("chunk_id", "before", "after")
# The columns of a ``Chunk``, named as its fields and in their order, on alias ``c``: a
# statement read with ``chunk_of`` selects them first.
SELECT_CHUNK = (
    "c.id, c.repo_id AS repository_id, c.file_path, c.language, c.symbol, c.kind, "
    "c.start_line, c.end_line, c.content, c.content_hash, c.token_count"
)


@functools.lru_cache(maxsize=262_144)
def term_key(term: str) -> int:
    """The signed 64-bit key of an analysed term in the postings table (collisions ~2^-64)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def chunk_of(row: asyncpg.Record) -> Chunk:
    """The chunk of a row that selects ``SELECT_CHUNK`` first (not validated again: it was
    when written, and a search reads hundreds)."""
    return Chunk.trusted_values(row.values())


@dataclass(slots=True)
class Rows:
    """What one write copies in: file, chunk and context records (``FILE_COLUMNS``,
    ``CHUNK_COLUMNS``, ``CONTEXT_COLUMNS``),
    the binary COPY data of their postings blocks (``postings.COLUMNS``), the document
    statistics they add, how many chunks come with a vector, and the dimension of those
    vectors (None without any)."""

    files: list[tuple[Any, ...]]
    chunks: list[tuple[Any, ...]]
    contexts: list[tuple[Any, ...]]
    postings: bytes
    n_docs: int
    total_len: int
    dimension: int | None
    n_vectors: int = 0


def build_rows(repo_id: str, files: Sequence[IndexedFile], seqs: Sequence[int]) -> Rows:
    """The rows of ``files`` of repository ``repo_id``, their chunks numbered by ``seqs`` in
    order (one seq per chunk)."""
    import numpy as np

    from codebase_mcp_search.adapters.postgres import postings  # numpy's, for writes only

    file_rows: list[tuple[Any, ...]] = []
    chunk_rows: list[tuple[Any, ...]] = []
    context_rows: list[tuple[Any, ...]] = []
    keys_all: list[int] = []
    tfs_all: list[int] = []
    per_chunk: list[int] = []
    # Postings blocks hold chunks alike in every attribute a search filters on: of one
    # path, and of one language (a chunker may tell the languages of a file apart); the
    # deletion of a file's chunks finds its blocks by the same (path, language).
    block_group: list[int] = []
    groups: dict[tuple[str, str | None], int] = {}
    doc_lens: list[int] = []
    dimension: int | None = None
    n_vectors = 0
    it = iter(seqs)
    for f in files:
        sf = f.file
        file_rows.append((repo_id, sf.path, sf.language, sf.content_hash, sf.size, f.text))
        ext = file_extension(sf.path)
        vectors = f.vectors
        lines = split_lines(f.text) if f.chunks else []
        for i, c in enumerate(f.chunks):
            seq = next(it)
            before, after = context_lines(
                f.text, c.content, c.start_line, c.end_line, CONTEXT_LINES, lines
            )
            context_rows.append((c.id, before, after))
            terms = lexical.document_terms(c.content, c.file_path, c.symbol)
            tfs = list(terms.values())
            doc_len = sum(tfs)
            keys = [term_key(t) for t in terms]
            keys_all.extend(keys)
            tfs_all.extend(tfs)
            per_chunk.append(len(keys))
            block_group.append(groups.setdefault((c.file_path, c.language), len(groups)))
            doc_lens.append(doc_len)
            vec = None
            if vectors is not None and vectors[i] is not None:
                vec = np.asarray(vectors[i], dtype=np.float32)
                dimension = vec.shape[0]
                n_vectors += 1
            chunk_rows.append(
                (
                    seq,
                    c.id,
                    repo_id,
                    c.file_path,
                    ext,
                    c.language,
                    c.symbol,
                    c.kind,
                    c.start_line,
                    c.end_line,
                    c.content,
                    c.content_hash,
                    c.token_count,
                    doc_len,
                    keys,
                    vec,
                )
            )
    counts = np.asarray(per_chunk, dtype=np.int64)
    blocks, _ = postings.binary_blocks(
        np.asarray(keys_all, dtype=np.int64),
        np.repeat(np.asarray(seqs, dtype=np.int64), counts),
        np.asarray(tfs_all, dtype=np.int32),
        np.repeat(np.asarray(doc_lens, dtype=np.int32), counts),
        np.repeat(np.asarray(block_group, dtype=np.int64), counts),
    )
    return Rows(
        file_rows,
        chunk_rows,
        context_rows,
        blocks,
        len(chunk_rows),
        int(sum(doc_lens)),
        dimension,
        n_vectors,
    )
