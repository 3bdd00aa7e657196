#!/usr/bin/env bash
# The whole test suite, from nothing but Python 3.11+: virtualenv, install, lint, type-check, test.
#   scripts/test.sh [extra pytest arguments]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
venv="${CODEBASE_MCP_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The local embedder's tests need torch: 2.13.0 is a CPU build (on this kind of machine it
# comes from local disk; elsewhere pip takes PyPI's build), installed before the extra so
# that sentence-transformers does not pull another one.
"$venv/bin/python" -m pip install --quiet "torch==2.13.0"
"$venv/bin/python" -m pip install --quiet -e "$here[dev,local]"
echo "== ruff"
"$venv/bin/ruff" check src tests bench noxfile.py hatch_build.py
"$venv/bin/ruff" format --check src tests bench noxfile.py hatch_build.py
echo "== mypy (strict, src)"
"$venv/bin/mypy"
echo "== pytest"
exec "$venv/bin/python" -m pytest "$@"
