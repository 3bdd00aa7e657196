"""File-change notification: watchfiles (native events, or its polling) behind ``ChangeSource``."""

from codebase_mcp_search.adapters.watch.watchfiles_source import (
    WatchfilesChangeSource,
    WatchfilesStream,
)

__all__ = ["WatchfilesChangeSource", "WatchfilesStream"]
