#!/usr/bin/env bash
# Quick start: set up a virtualenv, index a repository, then search it from another process.
#   scripts/demo.sh ["natural-language query"] [path/to/repo]
# Defaults: this project's own source tree, and a question about it. The index lives in the
# embedded PostgreSQL under CODEBASE_MCP_DATA_DIR (default: the platform's user data folder).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
query="${1:-split identifiers on camelCase for lexical ranking}"
repo="${2:-$here/src}"
venv="${CODEBASE_MCP_VENV:-$here/.venv}"
# (Re)install when the virtualenv is new or pyproject.toml changed since the last install.
stamp="$venv/.codebase-mcp-installed"
if [ ! -x "$venv/bin/codebase-mcp" ] || [ "$here/pyproject.toml" -nt "$stamp" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e "$here"
  touch "$stamp"
fi
"$venv/bin/codebase-mcp" index "$repo"
exec "$venv/bin/codebase-mcp" search "$query" --repo "$repo" --limit 5
