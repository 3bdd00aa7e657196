#!/usr/bin/env bash
# The test suite, from nothing but Python 3.11+: virtualenv, install, lint, type-check, test.
#   scripts/test.sh [extra pytest arguments]          everything (what CI runs)
#   scripts/test.sh --fast [extra pytest arguments]   the fast tier: no torch; unit and
#       contract tests (but those marked slow), one integration test per adapter and entry
#       point (tests/conftest.py's FAST_INTEGRATION)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
venv="${CODEBASE_MCP_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
if [ "$fast" = 1 ]; then
  # No torch, no local extra: tests that need them are left out (marker 'torch').
  "$venv/bin/python" -m pip install --quiet -e "$here[dev]"
else
  # The local embedder's tests need torch: 2.13.0 is a CPU build (on this kind of machine it
  # comes from local disk; elsewhere pip takes PyPI's build), installed before the extra so
  # that sentence-transformers does not pull another one.
  "$venv/bin/python" -m pip install --quiet "torch==2.13.0"
  "$venv/bin/python" -m pip install --quiet -e "$here[dev,local]"
fi
echo "== ruff"
"$venv/bin/ruff" check src tests bench scripts noxfile.py hatch_build.py
"$venv/bin/ruff" format --check src tests bench scripts noxfile.py hatch_build.py
echo "== mypy (strict, src)"
"$venv/bin/mypy"
echo "== pytest"
if [ "$fast" = 1 ]; then
  exec "$venv/bin/python" -m pytest --fast "$@"
fi
exec "$venv/bin/python" -m pytest "$@"
