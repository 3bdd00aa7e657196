"""codebase-mcp domain: models, ports, services and errors (stdlib + pydantic only)."""
