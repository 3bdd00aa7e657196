"""The locks of a repository's two layers: each serialises that layer's runs on the repository
across processes (a session advisory lock), and neither waits for the other."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from codebase_mcp_search.adapters.postgres._errors import DRIVER_ERRORS
from codebase_mcp_search.adapters.postgres.database import (
    LOCK,
    TRY_LOCK,
    UNLOCK,
    PgDatabase,
    lock_key,
)
from codebase_mcp_search.core.errors import RepositoryBusy


def repository_lock(
    database: PgDatabase,
    schema: str,
    project_id: str,
    repository_id: str,
    layer: str | None,
    doing: str,
) -> Callable[[bool], AbstractAsyncContextManager[None]]:
    """The lock of ``layer`` of a repository (None: the lexical layer, whose key is the
    repository's alone, as it was before the two layers), to hold with ``wait`` or not (then a
    held lock raises ``RepositoryBusy``, saying the repository is being ``doing``)."""
    parts = (repository_id,) if layer is None else (repository_id, layer)
    key = lock_key(schema, *parts)

    @asynccontextmanager
    async def held(wait: bool) -> AsyncIterator[None]:
        async with database.connection(session_state=True) as conn:
            got = await conn.fetchval(TRY_LOCK, key)
            if not got:
                if not wait:
                    raise RepositoryBusy(
                        f"repository {repository_id} of project {project_id!r} is being "
                        f"{doing} by another process: retry when it finishes, or wait for it",
                        repository_id=repository_id,
                    )
                await conn.execute(LOCK, key)
            try:
                yield
            finally:
                with contextlib.suppress(*DRIVER_ERRORS):
                    await conn.execute(UNLOCK, key)

    return held
