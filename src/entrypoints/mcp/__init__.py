"""The MCP server (fastmcp): code search and task tools over the library's workspaces."""

from codebase_mcp_search.entrypoints.mcp.server import build_server
from codebase_mcp_search.entrypoints.mcp.state import AllowedRoots, ServerState
from codebase_mcp_search.entrypoints.mcp.transports import serve

__all__ = ["AllowedRoots", "ServerState", "build_server", "serve"]
