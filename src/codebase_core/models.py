"""Domain models (pydantic v2). Pure data: no I/O, no third-party code but pydantic."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from codebase_core.errors import InvalidLimit, InvalidStatus, ValidationFailed, shorten

MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10
MAX_QUERY_CHARS = 500
CONTEXT_LINES = 10

_NAMESPACE = uuid.UUID("8b3f0c2e-6a4d-4f7e-9d8c-2b1a0e5f4c3d")


def utcnow() -> datetime:
    return datetime.now(UTC)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def split_lines(text: str) -> list[str]:
    """A file's lines as editors, git and grep number them.

    Only ``\n``, ``\r\n`` and ``\r`` end a line; unlike ``str.splitlines`` a form feed or
    U+2028 inside a line does not, so line numbers match what a user's editor shows. A trailing
    line break adds no line.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def context_lines(
    text: str,
    content: str,
    start_line: int,
    end_line: int,
    n: int,
    lines: list[str] | None = None,
) -> tuple[str, str]:
    """The ``n`` lines of ``text`` before ``start_line`` and after ``end_line`` (1-based), each
    group joined by ``\n``: what slicing ``split_lines(text)`` gives. ``content`` is the text of
    those lines; ``lines``, ``split_lines(text)`` when the caller has it (several hits in one
    file), is sliced as is.

    Otherwise the chunk's own text is found in the file and the context read around it, so a
    hit in a large file does not split all of it (a millisecond for 300 kB); a text that does
    not hold ``content`` at that line, holds it at more than a few earlier places, or has
    ``\r`` line ends is split after all.
    """
    fast = (
        lines is None
        and bool(content)
        and "\r" not in text
        and content.count("\n") == end_line - start_line
    )
    pos = text.find(content) if fast else -1
    row = counted = 0  # line breaks in text[:counted]
    for _ in range(8):  # text that recurs more often than that: split the file after all
        if pos < 0:
            break
        row += text.count("\n", counted, pos)
        counted = pos
        if row > start_line - 1:
            pos = -1
        elif row == start_line - 1 and (pos == 0 or text[pos - 1] == "\n"):
            end = pos + len(content)
            if end == len(text) or text[end] == "\n":
                break
        if pos >= 0:
            pos = text.find(content, pos + 1)
    else:
        pos = -1
    if pos < 0:
        lines = split_lines(text) if lines is None else lines
        before_lines = lines[max(0, start_line - 1 - n) : max(0, start_line - 1)]
        return "\n".join(before_lines), "\n".join(lines[end_line : end_line + n])
    # Back n line starts from the chunk's first line, forward n line ends from its last.
    first = pos
    for _ in range(n):
        if first == 0:
            break
        first = text.rfind("\n", 0, first - 1) + 1
    before = text[first : pos - 1] if first < pos else ""
    after_start = pos + len(content) + 1  # past the chunk's last line break
    last = after_start
    for _ in range(n):
        if last >= len(text):
            break
        nl = text.find("\n", last)
        last = len(text) if nl < 0 else nl + 1
    after = text[after_start:last] if last > after_start else ""
    return before, after.removesuffix("\n")


def repository_id_for(path: str) -> str:
    """A stable id for a repository root: the same absolute path gives the same id."""
    return str(uuid.uuid5(_NAMESPACE, path))


def chunk_id_for(
    repository_id: str, file_path: str, start: int, end: int, content_hash: str
) -> str:
    """A stable chunk id, so that re-indexing identical content yields identical ids."""
    return sha256_hex(f"{repository_id}\0{file_path}\0{start}\0{end}\0{content_hash}")[:32]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Repository(_Frozen):
    """An indexed source tree."""

    id: str
    name: str
    path: str
    embedding_model: str | None = None
    embedding_dimension: int | None = None
    file_count: int = 0
    chunk_count: int = 0
    indexed_at: datetime | None = None


class SourceFile(_Frozen):
    """One indexed file; ``path`` is relative to the repository root, with ``/`` separators."""

    path: str
    language: str | None
    content_hash: str
    size: int


class ChunkDraft(_Frozen):
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


class Chunk(_Frozen):
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


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    SEMANTIC = "semantic"
    LEXICAL = "lexical"


class SearchFilters(_Frozen):
    """Filters applied before ranking. ``directory`` is a literal path prefix."""

    repository_id: str | None = None
    file_type: str | None = None
    directory: str | None = None
    language: str | None = None

    @field_validator("directory")
    @classmethod
    def _directory(cls, v: str | None) -> str | None:
        """'./src/', 'src\\' and 'src' are one directory; '' or '.' is no filter."""
        if v is None:
            return None
        return normalise_directory(v) or None

    @field_validator("file_type")
    @classmethod
    def _file_type(cls, v: str | None) -> str | None:
        """'.PY' and 'py' are one file type (extensions are compared lowercased, no dot)."""
        if v is None:
            return None
        return normalise_file_type(v) or None

    def matches(self, chunk: Chunk) -> bool:
        if self.repository_id is not None and chunk.repository_id != self.repository_id:
            return False
        if self.language is not None and chunk.language != self.language:
            return False
        if self.file_type is not None and file_extension(chunk.file_path) != self.file_type:
            return False
        return self.directory is None or path_in_directory(chunk.file_path, self.directory)


def file_extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if "." not in name.lstrip("."):
        return ""
    return name.rsplit(".", 1)[-1].lower()


def normalise_file_type(file_type: str) -> str:
    """'.PY', ' py ' and 'py' are one extension: lowercased, without the dot."""
    return file_type.strip().lstrip(".").lower()


def normalise_directory(directory: str) -> str:
    d = directory.replace("\\", "/").strip()
    while d.startswith("./"):
        d = d[2:]
    d = d.strip("/")
    return "" if d == "." else d


def path_in_directory(path: str, directory: str) -> bool:
    """True when ``path`` lies in ``directory`` (already normalised); compared literally."""
    if directory == "":
        return True
    return path == directory or path.startswith(directory + "/")


class SearchQuery(_Frozen):
    """A validated search request."""

    text: str
    mode: SearchMode = SearchMode.HYBRID
    limit: int = DEFAULT_SEARCH_LIMIT
    filters: SearchFilters = SearchFilters()

    @classmethod
    def build(
        cls,
        text: str,
        *,
        mode: str | SearchMode | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        repository_id: str | None = None,
        file_type: str | None = None,
        directory: str | None = None,
        language: str | None = None,
        default_mode: SearchMode = SearchMode.HYBRID,
    ) -> SearchQuery:
        """Validate raw request fields, raising coded errors that name the field."""
        stripped = text.strip() if isinstance(text, str) else ""
        if not stripped:
            raise ValidationFailed("query", text, "must be a non-empty string of 1-500 characters")
        if len(text) > MAX_QUERY_CHARS:
            raise ValidationFailed(
                "query", text, f"must be at most {MAX_QUERY_CHARS} characters, got {len(text)}"
            )
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationFailed("limit", limit, f"must be an integer 1-{MAX_SEARCH_LIMIT}")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidLimit(limit, 1, MAX_SEARCH_LIMIT)
        if mode is None:
            resolved = default_mode
        else:
            try:
                resolved = SearchMode(mode)
            except ValueError:
                raise ValidationFailed(
                    "mode", mode, f"must be one of {[m.value for m in SearchMode]}"
                ) from None
        ft = None
        if file_type is not None:
            ft = normalise_file_type(file_type)
            if not ft or "/" in ft:
                raise ValidationFailed(
                    "file_type", file_type, "must be a file extension without the dot, e.g. 'py'"
                )
        d = normalise_directory(directory) if directory is not None else None
        if d is not None and ".." in d.split("/"):
            raise ValidationFailed("directory", directory, "must be a path inside the repository")
        return cls(
            text=stripped,
            mode=resolved,
            limit=limit,
            filters=SearchFilters(
                repository_id=repository_id or None,
                file_type=ft,
                directory=d or None,
                language=language.strip().lower() if language else None,
            ),
        )


class Location(_Frozen):
    """Another place holding the same chunk text."""

    repository_id: str
    file_path: str
    start_line: int
    end_line: int


class SearchHit(_Frozen):
    """One ranked result. ``similarity_score`` is in [0, 1]; its meaning depends on the mode."""

    chunk_id: str
    repository_id: str
    file_path: str
    language: str | None
    symbol: str | None
    kind: str | None
    start_line: int
    end_line: int
    content: str
    similarity_score: float = Field(ge=0.0, le=1.0)
    context_before: str = ""
    context_after: str = ""
    other_locations: list[Location] = Field(default_factory=list)
    # The file is gone or its content differs from what was indexed (re-index to refresh).
    stale: bool = False


class SearchResult(_Frozen):
    """Ranked hits plus how many chunks matched before the limit (see README)."""

    query: str
    mode: SearchMode
    hits: list[SearchHit]
    total_count: int
    latency_ms: float


class ScoredChunk(_Frozen):
    """A chunk with a store-computed raw score (cosine similarity, or BM25)."""

    chunk: Chunk
    score: float


class FileError(_Frozen):
    """A file that could not be indexed, and why."""

    path: str
    error: str


class IndexStatus(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILED = "failed"


class IndexResult(_Frozen):
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


@dataclass(frozen=True, slots=True)
class Embeddings:
    """Vectors of a batch of texts, in order, and how many texts were cut to fit the model.

    A dataclass, not a pydantic model: validating every float of a large batch costs more than
    the hashing embedder takes to compute it. For the same reason a vector may be any sequence
    of floats, such as a read-only row of a numpy array: a Python float per element (``tolist``)
    cost more than the stores' conversion to float32 of the row itself.
    """

    vectors: Sequence[Sequence[float]]
    truncated: int = 0


class ScanEntry(_Frozen):
    """A file found by a source tree scan, hashed but not decoded."""

    path: str
    size: int
    content_hash: str
    language: str | None


class ScanResult(_Frozen):
    """Files found under a root, and files skipped with a reason worth reporting."""

    files: list[ScanEntry]
    errors: list[FileError] = Field(default_factory=list)


# --- Tasks -----------------------------------------------------------------


class TaskStatus(StrEnum):
    NEED_TO_BE_DONE = "need to be done"
    IN_PROGRESS = "in-progress"
    COMPLETE = "complete"

    @classmethod
    def parse(cls, value: object) -> TaskStatus:
        """Accept the three values and the aliases ``pending`` and ``completed``."""
        if isinstance(value, TaskStatus):
            return value
        if isinstance(value, str):
            v = value.strip()
            alias = {"pending": cls.NEED_TO_BE_DONE, "completed": cls.COMPLETE}.get(v)
            if alias is not None:
                return alias
            for member in cls:
                if member.value == v:
                    return member
        raise InvalidStatus(
            f"Invalid status: {shorten(value)}. Valid values: {[m.value for m in cls]}",
            value=value,
        )


SHA_RE = re.compile(r"^[0-9a-f]{40}$")
MAX_TITLE = 200
MAX_DESCRIPTION = 2000
MAX_NOTES = 5000
MAX_REFERENCES = 10
MAX_REFERENCE_CHARS = 500
MAX_BRANCH_CHARS = 255


def check_title(title: object) -> str:
    if not isinstance(title, str) or not title.strip():
        raise ValidationFailed("title", title, "must be a non-empty string of 1-200 characters")
    if len(title) > MAX_TITLE:
        raise ValidationFailed("title", title, f"must be at most {MAX_TITLE} characters")
    return title


def check_text(field: str, value: object, maximum: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationFailed(field, value, "must be a string")
    if len(value) > maximum:
        raise ValidationFailed(
            field, value, f"must be at most {maximum} characters, got {len(value)}"
        )
    return value


def check_references(refs: object) -> list[str]:
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ValidationFailed("planning_references", refs, "must be a list of strings")
    if len(refs) > MAX_REFERENCES:
        raise ValidationFailed(
            "planning_references", refs, f"must hold at most {MAX_REFERENCES} items"
        )
    for r in refs:
        if not r.strip() or len(r) > MAX_REFERENCE_CHARS:
            raise ValidationFailed(
                "planning_references", r, f"each item must be 1-{MAX_REFERENCE_CHARS} characters"
            )
    return list(refs)


def check_commit(commit: object) -> str:
    if not isinstance(commit, str) or not SHA_RE.match(commit):
        raise ValidationFailed("commit", commit, "must be a 40-character lowercase hex git SHA")
    return commit


def check_branch(branch: object) -> str:
    if (
        not isinstance(branch, str)
        or not branch.strip()
        or len(branch) > MAX_BRANCH_CHARS
        or any(c.isspace() for c in branch)
    ):
        raise ValidationFailed(
            "branch", branch, f"must be a git branch name: 1-{MAX_BRANCH_CHARS} chars, no spaces"
        )
    return branch


class Task(_Frozen):
    """A unit of development work."""

    id: str
    title: Annotated[str, Field(min_length=1, max_length=MAX_TITLE)]
    description: Annotated[str | None, Field(max_length=MAX_DESCRIPTION)] = None
    notes: Annotated[str | None, Field(max_length=MAX_NOTES)] = None
    status: TaskStatus = TaskStatus.NEED_TO_BE_DONE
    branches: list[str] = Field(default_factory=list)
    commits: list[str] = Field(default_factory=list)
    planning_references: list[str] = Field(default_factory=list, max_length=MAX_REFERENCES)
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None

    @field_validator("commits")
    @classmethod
    def _commits_are_shas(cls, v: list[str]) -> list[str]:
        for c in v:
            check_commit(c)
        return v


class TaskSummary(_Frozen):
    """The token-lean view of a task used by list operations."""

    id: str
    title: str
    status: TaskStatus
    created_at: datetime
    updated_at: datetime


class TaskPage(_Frozen):
    tasks: list[Task]
    total_count: int


class ProjectInfo(_Frozen):
    """A workspace (an isolated set of repositories, chunks and tasks) and its size."""

    id: str
    # The Postgres schema holding the project (None with the memory store).
    database_name: str | None
    repositories: int = 0
    files: int = 0
    chunks: int = 0
    tasks: int = 0
    # Bytes on disk (tables, indexes), where the store can tell.
    size_bytes: int | None = None


ProgressPhase = Literal[
    "waiting", "scanning", "chunking", "embedding", "writing", "deleting", "optimizing", "done"
]


PROJECT_ID_RE = re.compile(r"^[A-Za-z0-9_\- ]{1,64}$")
DEFAULT_PROJECT = "default"


def check_project_id(project_id: str | None) -> str:
    """A workspace id: 1-64 ASCII letters, digits, '-', '_' or spaces."""
    if project_id is None:
        return DEFAULT_PROJECT
    if not isinstance(project_id, str) or not PROJECT_ID_RE.match(project_id):
        raise ValidationFailed(
            "project_id",
            project_id,
            "must be 1-64 characters of ASCII letters, digits, '-', '_' or spaces",
        )
    return project_id
