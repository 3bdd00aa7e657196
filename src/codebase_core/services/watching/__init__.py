"""Watching repositories: file changes coalesced into incremental index jobs."""

from codebase_mcp_search.core.services.watching.coalescing import Burst, WatchConfig, relevant
from codebase_mcp_search.core.services.watching.repository import IgnoresOf, RepositoryWatch
from codebase_mcp_search.core.services.watching.supervisor import (
    Target,
    TargetsOf,
    Watching,
    WatchState,
)

__all__ = [
    "Burst",
    "IgnoresOf",
    "RepositoryWatch",
    "Target",
    "TargetsOf",
    "WatchConfig",
    "WatchState",
    "Watching",
    "relevant",
]
