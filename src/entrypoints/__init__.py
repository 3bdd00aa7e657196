"""Entry points: the composition root, the CLI and (later) the MCP server."""
