"""The MCP server (fastmcp): code search and task tools over the library's workspaces."""

from entrypoints.mcp.server import AllowedRoots, ServerState, build_server, serve

__all__ = ["AllowedRoots", "ServerState", "build_server", "serve"]
