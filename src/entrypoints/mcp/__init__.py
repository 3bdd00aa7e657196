"""The MCP server (fastmcp): code search and task tools over the library's workspaces."""

from codebase_mcp_search.entrypoints.mcp.server import build_server, serve
from codebase_mcp_search.entrypoints.mcp.state import AllowedRoots, ServerState

__all__ = ["AllowedRoots", "ServerState", "build_server", "serve"]
