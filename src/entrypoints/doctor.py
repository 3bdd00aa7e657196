"""``codebase-mcp doctor``: the effective store and embedder, and whether each answers."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from codebase_mcp_search.core.errors import CoreError
from codebase_mcp_search.core.models.watching import WatchMode
from codebase_mcp_search.entrypoints.container import running_container
from codebase_mcp_search.entrypoints.embedders import EmbedderChoice
from codebase_mcp_search.entrypoints.settings import Settings
from codebase_mcp_search.entrypoints.watching import change_source

# Repositories of the default project on which doctor tries watching.
PROBED_ROOTS = 5


async def diagnose(settings: Settings) -> dict[str, Any]:
    """A report with a ``store``, an ``embedder`` and a ``watching`` section; ``ok`` when the
    store and the embedder are usable."""
    async with running_container(settings) as container:
        store = await _store(container, settings)
        embedder = await _embedder(container, settings)
        watching = await _watching(container, settings, store["reachable"])
    return {
        "ok": store["reachable"] and embedder["reachable"],
        "store": store,
        "embedder": embedder,
        "watching": watching,
    }


async def _watching(container: Any, settings: Settings, reachable: bool) -> dict[str, Any]:
    """Whether ``serve`` and ``worker`` watch, and how: the file system's events (native) or
    polling, tried on the default project's repositories (the current directory without
    any)."""
    if not settings.watch:
        return {"enabled": False, "mode": None}
    roots: list[str] = []
    if reachable:
        with contextlib.suppress(CoreError):
            store = await container.chunk_store()
            roots = [r.path for r in await store.list_repositories()][:PROBED_ROOTS]
    source = change_source(settings)
    modes: dict[str, str | None] = {}
    for root in roots or [str(Path.cwd())]:
        if not await source.sees(root):
            continue
        with contextlib.suppress(CoreError):
            stream = await source.open(root)
            modes[root] = stream.why if stream.mode is WatchMode.POLLING else None
            await stream.close()
    polled = {root: why for root, why in modes.items() if why is not None}
    report: dict[str, Any] = {
        "enabled": True,
        "mode": WatchMode.POLLING.value if polled else WatchMode.NATIVE.value,
    }
    if polled:
        report["why"] = next(iter(polled.values()))
    return report


async def _store(container: Any, settings: Settings) -> dict[str, Any]:
    if settings.store == "memory":
        return {"kind": "memory", "location": "this process", "reachable": True}
    database = await container.database()
    report: dict[str, Any] = {"kind": "postgres", "location": database.url}
    try:
        info = await database.server_info()
    except CoreError as e:
        return {**report, "reachable": False, "error": str(e)}
    return {**report, "server": info.server, "pgvector": info.pgvector, "reachable": True}


async def _embedder(container: Any, settings: Settings) -> dict[str, Any]:
    report: dict[str, Any] = {"requested": settings.embedder}
    try:
        choice: EmbedderChoice = await container.embedder_choice()
    except CoreError as e:
        return {**report, "chosen": settings.embedder, "reachable": False, "error": str(e)}
    report.update(chosen=choice.chosen, reason=choice.reason)
    if choice.embedder is None:
        # Lexical search only is a working configuration, not a fault.
        return {**report, "model": None, "dimension": None, "reachable": True}
    return {
        **report,
        "model": choice.embedder.model,
        "dimension": choice.embedder.dimension,
        "reachable": True,
    }
