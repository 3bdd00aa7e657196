"""``codebase-mcp doctor``: the effective store and embedder, and whether each answers."""

from __future__ import annotations

from typing import Any

from codebase_mcp_search.core.errors import CoreError
from codebase_mcp_search.entrypoints.container import running_container
from codebase_mcp_search.entrypoints.embedders import EmbedderChoice
from codebase_mcp_search.entrypoints.settings import Settings


async def diagnose(settings: Settings) -> dict[str, Any]:
    """A report with a ``store`` and an ``embedder`` section; ``ok`` when both are usable."""
    async with running_container(settings) as container:
        store = await _store(container, settings)
        embedder = await _embedder(container, settings)
    return {
        "ok": store["reachable"] and embedder["reachable"],
        "store": store,
        "embedder": embedder,
    }


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
