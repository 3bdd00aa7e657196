"""Search filters in SQL: ``SqlFilter`` turns ``SearchFilters`` into bound conditions on the
chunks table, and ``narrowed`` drops a repository condition that every chunk meets."""

from __future__ import annotations

from typing import Any

from codebase_mcp_search.adapters.postgres.chunk_store.session import ProjectSession
from codebase_mcp_search.adapters.postgres.sql import Sql, Statement, all_of
from codebase_mcp_search.core.models import SearchFilters

# No filter: the searches the process's copies (vectors, postings) can answer.
NO_FILTERS = SearchFilters()

# Conditions on alias ``c``, each value bound (``{p}``: the number of its first parameter).
REPOSITORY = Statement("c.repo_id = ${p}")
LANGUAGE = Statement("c.language = ${p}")
FILE_TYPE = Statement("c.file_ext = ${p}")
# A literal prefix as a byte range (file_path is COLLATE "C"; '0' follows '/'), so no LIKE
# escaping. The outer range is one index range scan; the inner test keeps 'd' and 'd/...' and
# drops its neighbours 'd.py', 'd-x', ... (an OR of the two alone cannot bound the scan: it
# read the whole path index). Parameters: d, d + '/', d + '0'.
DIRECTORY = Statement(
    "c.file_path >= ${p} AND c.file_path < ${p2} AND (c.file_path = ${p} OR c.file_path >= ${p1})"
)
WHOLE_REPOSITORY = Statement(
    """SELECT r.chunk_count = st.n_docs FROM {s}.repositories r, {s}.corpus_stats st
       WHERE r.id = $1"""
)


class SqlFilter:
    """SQL conditions (on alias ``c``) for ``SearchFilters``, with bound parameters numbered
    from ``first_param``."""

    def __init__(self, filters: SearchFilters, first_param: int) -> None:
        self.params: list[Any] = []
        conds: list[Sql] = []

        def bind(*values: Any) -> int:
            """The number of the first of ``values``' parameters."""
            self.params.extend(values)
            return first_param + len(self.params) - len(values)

        if filters.repository_id is not None:
            conds.append(REPOSITORY.piece(p=bind(filters.repository_id)))
        if filters.language is not None:
            conds.append(LANGUAGE.piece(p=bind(filters.language)))
        if filters.file_type is not None:
            conds.append(FILE_TYPE.piece(p=bind(filters.file_type)))
        d = filters.directory  # normalised by SearchFilters
        if d:
            p = bind(d, d + "/", d + "0")
            conds.append(DIRECTORY.piece(p=p, p1=p + 1, p2=p + 2))
        self.sql = all_of(conds)
        self.empty = not conds


async def narrowed(db: ProjectSession, filters: SearchFilters) -> SearchFilters:
    """``filters`` without a repository condition that every chunk of the project meets
    (its only indexed repository, the usual case): the same rows, and no set of every chunk
    id of the project to build for the filter."""
    if filters.repository_id is None:
        return filters
    whole = await db.conn.fetchval(db.sql(WHOLE_REPOSITORY), filters.repository_id)
    return filters.model_copy(update={"repository_id": None}) if whole else filters
