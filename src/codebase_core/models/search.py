"""Search models: a validated query and its filters, the store's scored chunks, and the ranked
hits a search returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypedDict, Unpack

from pydantic import Field, field_validator

from codebase_mcp_search.core.defaults import (
    DEFAULT_SEARCH_LIMIT,
    MAX_FILE_TYPE_CHARS,
    MAX_LANGUAGE_CHARS,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
)
from codebase_mcp_search.core.errors import Hint, InvalidLimit, ValidationFailed
from codebase_mcp_search.core.languages import KNOWN_LANGUAGES
from codebase_mcp_search.core.models.base import FrozenModel, at_most, check_uuid, no_nul
from codebase_mcp_search.core.models.indexing import Chunk, SemanticLayer
from codebase_mcp_search.core.models.text import (
    absolute_directory,
    file_extension,
    normalise_directory,
    normalise_file_type,
    path_in_directory,
)


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    SEMANTIC = "semantic"
    LEXICAL = "lexical"


class SearchFilters(FrozenModel):
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


class SearchOptions(TypedDict, total=False):
    """What a search request may say beside its text (None or left out: the default)."""

    mode: str | SearchMode | None
    limit: int | None
    repository_id: str | None
    file_type: str | None
    directory: str | None
    language: str | None


class SearchQuery(FrozenModel):
    """A validated search request: what each interface builds once and hands down whole."""

    text: str
    mode: SearchMode | None = None
    """None: the service decides (hybrid, answered lexically when nothing searched has
    vectors or no embedder is in use)."""
    limit: int = DEFAULT_SEARCH_LIMIT
    filters: SearchFilters = SearchFilters()
    within: str | None = None
    """A directory given as an absolute path: the search service finds the repository whose
    root holds it and searches that repository filtered to it (``filters.directory`` is then
    relative to that root)."""

    @classmethod
    def build(cls, text: str, **options: Unpack[SearchOptions]) -> SearchQuery:
        """Validate raw request fields (None: the default), raising coded errors that name the
        field."""
        mode, limit = options.get("mode"), options.get("limit")
        repository_id, file_type = options.get("repository_id"), options.get("file_type")
        directory, language = options.get("directory"), options.get("language")
        for field, value in (
            ("query", text),
            ("repository_id", repository_id),
            ("file_type", file_type),
            ("directory", directory),
            ("language", language),
        ):
            if value is not None and not isinstance(value, str):
                raise ValidationFailed(field, value, "must be a string")
            no_nul(field, value)
        at_most("file_type", file_type, MAX_FILE_TYPE_CHARS)
        at_most("directory", directory, MAX_PATH_CHARS)
        at_most("language", language, MAX_LANGUAGE_CHARS)
        if repository_id:
            repository_id = check_uuid(
                repository_id, "repository_id", "a repository id", Hint.REPOSITORY_ID
            )
        stripped = text.strip() if isinstance(text, str) else ""
        if not stripped:
            raise ValidationFailed(
                "query", text, f"must be a non-empty string of 1-{MAX_QUERY_CHARS} characters"
            )
        if len(text) > MAX_QUERY_CHARS:
            raise ValidationFailed(
                "query", text, f"must be at most {MAX_QUERY_CHARS} characters, got {len(text)}"
            )
        if limit is None:
            limit = DEFAULT_SEARCH_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValidationFailed("limit", limit, f"must be an integer 1-{MAX_SEARCH_LIMIT}")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidLimit(limit, 1, MAX_SEARCH_LIMIT)
        resolved = None
        if mode is not None:
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
        within = absolute_directory(directory) if directory is not None else None
        d = normalise_directory(directory) if directory is not None and not within else None
        if ".." in (within or d or "").split("/"):
            raise ValidationFailed("directory", directory, "must be a path inside the repository")
        lang = language.strip().lower() if language else None
        if lang and lang not in KNOWN_LANGUAGES:
            # No chunk carries another language: the filter would match nothing, silently.
            raise ValidationFailed(
                "language",
                language,
                f"unknown language; known: {', '.join(sorted(KNOWN_LANGUAGES))}",
            )
        return cls(
            text=stripped,
            mode=resolved,
            limit=limit,
            filters=SearchFilters(
                repository_id=repository_id or None,
                file_type=ft,
                directory=d or None,
                language=lang or None,
            ),
            within=within,
        )


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A chunk with a score (a store's cosine or BM25, then fused and ranked ones).

    A plain frozen dataclass, not a model: it never crosses a boundary unvalidated (its chunk
    is a ``Chunk``), and every search builds and rebuilds hundreds of them between retrieval
    and ranking, where even pydantic's unvalidated construction was a tenth of a loaded
    server's time."""

    chunk: Chunk
    score: float

    @classmethod
    def of(cls, chunk: Chunk, score: float) -> ScoredChunk:
        return cls(chunk, score)

    def store_order(self) -> tuple[float, str, int, str]:
        """A store's order of its lists: the best first, ties by path, line and repository."""
        return ScoredChunk.order_of(self.chunk, self.score)

    @staticmethod
    def order_of(chunk: Chunk, score: float) -> tuple[float, str, int, str]:
        """``store_order`` of ``chunk`` at ``score``, without building the pair."""
        return -score, chunk.file_path, chunk.start_line, chunk.repository_id


@dataclass(frozen=True, slots=True)
class StemGroup:
    """Index terms that a lexical search scores together as one term (``core.stems``: the
    forms sharing a query word's stem), beside the query's own terms.

    In each chunk the group's frequency is the sum of its terms' frequencies; its document
    frequency is the sum of theirs, at most the number of chunks (what a store reads from
    each term's own without merging postings); its idf is ``weight`` times the idf of a term
    that frequent, and it counts in the query's BM25 bound as any term does. A group of
    which the store holds no term adds nothing, to the scores or to the bound; a chunk holding
    only a group's term is a match."""

    terms: tuple[str, ...]
    weight: float


class Location(FrozenModel):
    """Another place holding the same chunk text."""

    repository_id: str
    file_path: str
    start_line: int
    end_line: int


class SearchHit(FrozenModel):
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


class SearchResult(FrozenModel):
    """Ranked hits plus how many chunks matched before the limit (see docs/search.md)."""

    query: str
    mode: SearchMode
    hits: list[SearchHit]
    total_count: int
    latency_ms: float
    # Repositories without vectors (indexed before an embedder was configured) that this
    # semantic or hybrid search ranked lexically; re-indexing them adds their vectors.
    lexical_only_repositories: list[str] = Field(default_factory=list)
    # Repositories searched whose semantic layer is still being built: their chunks without
    # a vector were scored by their lexical evidence alone.
    semantic_coverage: list[SemanticLayer] = Field(default_factory=list)
    # Repositories searched whose first indexing run has not finished: their files are
    # searchable as they are written, so a search may miss what is still to come.
    indexing_repositories: list[str] = Field(default_factory=list)
    # Repositories the search looked in (0: nothing is indexed, or none passed the
    # repository filter); None where it was not counted.
    repositories_searched: int | None = None
