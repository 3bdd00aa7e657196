"""``python -m codebase_mcp_search``: the ``codebase-mcp`` command."""

from codebase_mcp_search.entrypoints.cli.main import main

raise SystemExit(main())
