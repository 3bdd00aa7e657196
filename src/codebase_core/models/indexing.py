"""Indexing models: repositories, files and their chunks, source tree scans, embeddings, and
what an indexing run reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import PurePath
from typing import Literal

from pydantic import Field, field_validator

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.defaults import MAX_PATH_CHARS, MAX_REPOSITORY_NAME
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models.base import FrozenModel, no_nul


class Repository(FrozenModel):
    """An indexed source tree. Its index has two layers: the lexical one (files and chunks,
    ``chunk_count``) written by an indexing run, and the semantic one (a vector per chunk of
    ``embedding_model``, ``vector_count`` of them) built after it."""

    id: str
    name: str
    path: str
    embedding_model: str | None = None
    embedding_dimension: int | None = None
    file_count: int = 0
    chunk_count: int = 0
    indexed_at: datetime | None = None
    vector_count: int = 0
    """Chunks holding a vector of ``embedding_model``: all of them once the semantic layer
    is built."""
    analyser_version: int = Field(default=lexical.ANALYSER_VERSION, ge=1)
    """The version of the lexical analyser its chunks' terms were derived by
    (``core.lexical.ANALYSER_VERSION``); an older one is derived again by the next index run."""

    @property
    def vectors_missing(self) -> int:
        """Chunks still waiting for their vector (none without an embedding model)."""
        if self.embedding_model is None:
            return 0
        return max(0, self.chunk_count - self.vector_count)


class SemanticLayer(FrozenModel):
    """How far a repository's semantic layer is built: ``vectors`` of its ``chunks`` hold a
    vector, and the job building the rest, if one is active (with its estimate of the time
    left, once it has a rate to go by)."""

    repository_id: str
    repository: str
    """The repository's name."""
    vectors: int
    chunks: int
    job_id: str | None = None
    eta_seconds: float | None = None

    @classmethod
    def of(cls, repository: Repository) -> SemanticLayer:
        return cls(
            repository_id=repository.id,
            repository=repository.name,
            vectors=min(repository.vector_count, repository.chunk_count),
            chunks=repository.chunk_count,
        )

    @property
    def percent(self) -> float:
        """Chunks with a vector, in percent of all (100 for a repository without chunks)."""
        return 100.0 if self.chunks == 0 else round(100.0 * self.vectors / self.chunks, 1)


class IndexRequest(FrozenModel):
    """What to index: built once by the interface that received it (which resolves the path on
    its file system), handed down whole to the indexing run or the job that runs it."""

    root: str
    """The repository's root: an absolute, resolved path."""
    name: str | None = None
    """A display name; None keeps the repository's name (a first index: the root's last part)."""
    force: bool = False
    """Re-chunk every file (cached vectors are reused)."""

    @field_validator("root")
    @classmethod
    def _absolute(cls, root: str) -> str:
        # Also for a request built field by field: every run indexes an absolute root.
        if not PurePath(root).is_absolute():
            raise ValidationFailed("repo_path", root, "must be an absolute path")
        return root

    @classmethod
    def build(
        cls, root: str, *, name: str | None = None, force: bool = False, field: str = "repo_path"
    ) -> IndexRequest:
        """Validate raw fields, raising coded errors that name the field (``field`` for the
        root, as the caller's interface calls it)."""
        for key, value in ((field, root), ("name", name)):
            if value is not None and not isinstance(value, str):
                raise ValidationFailed(key, value, "must be a string")
            no_nul(key, value)
        if not root or not PurePath(root).is_absolute() or len(root) > MAX_PATH_CHARS:
            raise ValidationFailed(
                field, root, f"must be an absolute path of at most {MAX_PATH_CHARS} characters"
            )
        if name is not None and len(name) > MAX_REPOSITORY_NAME:
            raise ValidationFailed(
                "name", name, f"must be at most {MAX_REPOSITORY_NAME} characters"
            )
        if name is not None and not name.strip():
            # Refused rather than read as "no name": that would keep the old name silently.
            raise ValidationFailed(
                "name",
                name,
                "must not be blank; without a name the repository keeps its own (a first "
                "index names it after its directory)",
            )
        if not isinstance(force, bool):
            raise ValidationFailed("force_reindex", force, "must be true or false")
        return cls(root=root, name=None if name is None else name.strip(), force=force)


class SourceFile(FrozenModel):
    """One indexed file; ``path`` is relative to the repository root, with ``/`` separators."""

    path: str
    language: str | None
    content_hash: str
    size: int


class ChunkDraft(FrozenModel):
    """A chunk as a chunker cuts it, before it belongs to a repository.

    ``token_count``, when the chunker knows it, is the injected TokenCounter's count of
    ``content`` (saves counting every chunk twice).
    """

    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    content: str
    symbol: str | None = None
    kind: str | None = None
    token_count: int | None = Field(default=None, ge=0)


class Chunk(FrozenModel):
    """A searchable piece of a file. Lines are 1-based and inclusive."""

    id: str
    repository_id: str
    file_path: str
    language: str | None
    symbol: str | None = None
    kind: str | None = None
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    content: str
    content_hash: str
    token_count: int = Field(ge=0)


class ScanEntry(FrozenModel):
    """A file found by a source tree scan, hashed but not decoded."""

    path: str
    size: int
    content_hash: str
    language: str | None


class FileError(FrozenModel):
    """A file that could not be indexed, and why."""

    path: str
    error: str


class SkipReason(StrEnum):
    """Why a scan left a file (or a whole directory) out of the index."""

    TOO_LARGE = "too_large"
    BINARY = "binary"
    MINIFIED = "minified"
    SECRET = "secret"
    LOCK_FILE = "lock_file"
    IGNORED = "ignored"
    """Matched by .gitignore, .ignore, .git/info/exclude or the configured exclude patterns."""
    EXCLUDED_DIR = "excluded_dir"
    """A directory never indexed (node_modules, virtualenvs, build outputs, ...)."""


class SkippedFile(FrozenModel):
    """A file, or a directory (its path ends with ``/``), that a scan left out, and why."""

    path: str
    reason: SkipReason


class ScanResult(FrozenModel):
    """Files found under a root, files that failed with a reason worth reporting
    (``errors``), and what was left out on purpose (``skipped``)."""

    files: list[ScanEntry]
    errors: list[FileError] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Embeddings:
    """Vectors of a batch of texts, in order, and how many texts were cut to fit the model.

    A dataclass, not a pydantic model: validating every float of a large batch costs more than
    the hashing embedder takes to compute it. For the same reason a vector may be any sequence
    of floats, such as a read-only row of a numpy array: a Python float per element (``tolist``)
    costs more than the stores' conversion to float32 of the row itself.
    """

    vectors: Sequence[Sequence[float]]
    truncated: int = 0


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A file ready to store: its snapshot text, chunks and (optionally) one vector per chunk.

    A dataclass: an indexing run builds one per changed file, and its chunks are validated
    ``Chunk``s already."""

    file: SourceFile
    text: str
    chunks: Sequence[Chunk]
    vectors: Sequence[Sequence[float] | None] | None
    """One entry per chunk (a vector, or None for one left to the semantic layer), or None."""


class IndexStatus(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILED = "failed"


class IndexResult(FrozenModel):
    """What an indexing run did."""

    repository_id: str
    repository_name: str
    files_indexed: int
    files_unchanged: int
    files_deleted: int
    chunks_created: int
    chunks_embedded: int
    embeddings_cached: int
    # Chunks longer than the embedding model's input limit: embedded from their first part.
    chunks_truncated: int = 0
    duration_seconds: float
    status: IndexStatus
    errors: list[FileError] = Field(default_factory=list)
    # What the scan left out on purpose: counts by SkipReason value, and each file (or
    # directory, ending with "/") for detailed views.
    files_skipped: dict[str, int] = Field(default_factory=dict)
    skipped: list[SkippedFile] = Field(default_factory=list)
    # The semantic layer after this run: chunks still waiting for their vector (built after
    # it, see VectorResult), and the job building them when one was queued.
    vectors_missing: int = 0
    vectors_job_id: str | None = None


class VectorResult(FrozenModel):
    """What a run of the semantic layer did: the vectors it stored for a repository's chunks."""

    repository_id: str
    repository_name: str
    chunks_embedded: int
    """Chunk texts the model embedded."""
    embeddings_cached: int
    """Chunks given a vector from the embedding cache (their text was embedded before)."""
    chunks_truncated: int = 0
    vectors_missing: int = 0
    """Chunks still without a vector when it ended (written since it began): the next run's."""
    duration_seconds: float


ProgressPhase = Literal[
    "waiting", "scanning", "chunking", "embedding", "writing", "deleting", "optimizing", "done"
]
