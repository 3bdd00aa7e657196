"""The installed package's version, for ``--version``, the MCP handshake and ``/health``."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version


@functools.cache
def package_version() -> str:
    try:
        return version("codebase-mcp-search")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"
