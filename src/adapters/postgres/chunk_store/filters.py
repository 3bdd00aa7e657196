"""Search filters in SQL: ``SqlFilter`` turns ``SearchFilters`` into bound conditions on the
chunks table, and ``narrowed`` drops a repository condition that every chunk meets."""

from __future__ import annotations

from typing import Any

from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.core.models import SearchFilters

# No filter: the searches the process's copies (vectors, postings) can answer.
NO_FILTERS = SearchFilters()


class SqlFilter:
    """SQL conditions (on alias ``c``) for ``SearchFilters``, with bound parameters numbered
    from ``first_param``."""

    def __init__(self, filters: SearchFilters, first_param: int) -> None:
        self.params: list[Any] = []
        conds: list[str] = []

        def bind(value: Any) -> str:
            self.params.append(value)
            return f"${first_param + len(self.params) - 1}"

        if filters.repository_id is not None:
            conds.append(f"c.repo_id = {bind(filters.repository_id)}")
        if filters.language is not None:
            conds.append(f"c.language = {bind(filters.language)}")
        if filters.file_type is not None:
            conds.append(f"c.file_ext = {bind(filters.file_type)}")
        d = filters.directory  # normalised by SearchFilters
        if d:
            # A literal prefix as a byte range (file_path is COLLATE "C"; '0' follows '/'),
            # so no LIKE escaping. The outer range is one index range scan; the inner test
            # keeps 'd' and 'd/...' and drops its neighbours 'd.py', 'd-x', ... (an OR of
            # the two alone cannot bound the scan: it read the whole path index).
            p1, p2, p3 = bind(d), bind(d + "/"), bind(d + "0")
            conds.append(
                f"c.file_path >= {p1} AND c.file_path < {p3} "
                f"AND (c.file_path = {p1} OR c.file_path >= {p2})"
            )
        self.sql = " AND ".join(conds) if conds else "true"
        self.empty = not conds


async def narrowed(db: ProjectSession, filters: SearchFilters) -> SearchFilters:
    """``filters`` without a repository condition that every chunk of the project meets
    (its only indexed repository, the usual case): the same rows, and no set of every chunk
    id of the project to build for the filter."""
    if filters.repository_id is None:
        return filters
    s = db.s
    whole = await db.conn.fetchval(
        f"SELECT r.chunk_count = st.n_docs FROM {s}.repositories r, {s}.corpus_stats st "
        "WHERE r.id = $1",
        filters.repository_id,
    )
    return filters.model_copy(update={"repository_id": None}) if whole else filters
