"""Domain models (pydantic v2). Pure data: no I/O, no third-party code but pydantic.

One module per area; import any name from this package:

- ``text``: a file's lines, the context around a chunk, paths, content hashes and stable ids
- ``indexing``: repositories, files, chunks, scans, embeddings, an indexing run's result
- ``search``: a validated query and its filters, scored chunks, ranked hits
- ``tasks``: development tasks, with the rules of their fields in the model's validators
- ``projects``: project (workspace) ids and sizes
"""

from codebase_core.models.base import utcnow
from codebase_core.models.indexing import (
    Chunk,
    ChunkDraft,
    Embeddings,
    FileError,
    IndexResult,
    IndexStatus,
    ProgressPhase,
    Repository,
    ScanEntry,
    ScanResult,
    SkippedFile,
    SkipReason,
    SourceFile,
)
from codebase_core.models.projects import (
    DEFAULT_PROJECT,
    PROJECT_ID_RE,
    ProjectInfo,
    check_project_id,
)
from codebase_core.models.search import (
    CONTEXT_LINES,
    DEFAULT_SEARCH_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    Location,
    ScoredChunk,
    SearchFilters,
    SearchHit,
    SearchMode,
    SearchQuery,
    SearchResult,
)
from codebase_core.models.tasks import (
    MAX_BRANCH_CHARS,
    MAX_DESCRIPTION,
    MAX_NOTES,
    MAX_REFERENCE_CHARS,
    MAX_REFERENCES,
    MAX_TITLE,
    SHA_RE,
    Task,
    TaskPage,
    TaskStatus,
    TaskSummary,
)
from codebase_core.models.text import (
    chunk_id_for,
    context_lines,
    file_extension,
    last_name,
    normalise_directory,
    normalise_file_type,
    path_in_directory,
    repository_id_for,
    sha256_hex,
    split_lines,
    symbol_names,
)

__all__ = [
    "CONTEXT_LINES",
    "DEFAULT_PROJECT",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_BRANCH_CHARS",
    "MAX_DESCRIPTION",
    "MAX_NOTES",
    "MAX_QUERY_CHARS",
    "MAX_REFERENCES",
    "MAX_REFERENCE_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_TITLE",
    "PROJECT_ID_RE",
    "SHA_RE",
    "Chunk",
    "ChunkDraft",
    "Embeddings",
    "FileError",
    "IndexResult",
    "IndexStatus",
    "Location",
    "ProgressPhase",
    "ProjectInfo",
    "Repository",
    "ScanEntry",
    "ScanResult",
    "ScoredChunk",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SearchQuery",
    "SearchResult",
    "SkipReason",
    "SkippedFile",
    "SourceFile",
    "Task",
    "TaskPage",
    "TaskStatus",
    "TaskSummary",
    "check_project_id",
    "chunk_id_for",
    "context_lines",
    "file_extension",
    "last_name",
    "normalise_directory",
    "normalise_file_type",
    "path_in_directory",
    "repository_id_for",
    "sha256_hex",
    "split_lines",
    "symbol_names",
    "utcnow",
]
