"""A lexical ``search`` from the command line loads only what it uses (issue 35): a process of
its own, as a user runs it, with the ONNX model configured, imports no embedder or model
runtime, no MCP framework, no numpy, nothing that indexes (chunker, token counter, worker
pool, file scanning), no in-memory adapter and (printing JSON) no console. What it imports
is most of its time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_mcp_search.entrypoints.cli.main import main

NOT_FOR_A_LEXICAL_SEARCH = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "sentence_transformers",
    "torch",
    "httpx",
    "fastmcp",
    "mcp",
    "tiktoken",
    "tree_sitter",
    "tree_sitter_language_pack",
    "pathspec",
    "rich",  # JSON output: no console
    "codebase_mcp_search.adapters.onnx",
    "codebase_mcp_search.adapters.hashing",
    "codebase_mcp_search.adapters.local",
    "codebase_mcp_search.adapters.memory",
    "codebase_mcp_search.adapters.tokens",
    "codebase_mcp_search.adapters.treesitter",
    "codebase_mcp_search.adapters.workers",
    "codebase_mcp_search.adapters.postgres.postings",
    "codebase_mcp_search.entrypoints.mcp",
    "codebase_mcp_search.entrypoints.worker",
)

# The console script's way in (``main()`` on this process's command line), then the modules
# loaded, on stderr's last line.
PROBE = """
import sys
from codebase_mcp_search.entrypoints.cli.main import main
sys.argv = ["codebase-mcp", *{argv!r}]
code = main()
names = {names!r}
loaded = sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in names))
print("loaded:", ",".join(loaded), file=sys.stderr)
raise SystemExit(code)
"""


@pytest.fixture
def indexed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "rank.py").write_text(
        "def fuse_rankings(lexical, semantic):\n"
        '    """Fuse the two rankings by reciprocal rank."""\n'
        "    return sorted(set(lexical) | set(semantic))\n"
    )
    (root / "README.md").write_text("# Ranking\n\nTwo rankings are fused into one.\n")
    assert main(["index", str(root), "-q"]) == 0
    capsys.readouterr()
    return root


@pytest.mark.parametrize(
    ("query", "found"), [("fuse the two rankings", True), ("zyxxyz nowhere", False)]
)
def test_a_lexical_search_imports_no_embedder_numpy_mcp_or_indexing(
    indexed: Path, query: str, found: bool
) -> None:
    argv = ["search", query, "--mode", "lexical", "--json"]
    env = {**os.environ, "CODEBASE_MCP_EMBEDDER": "onnx"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, names=NOT_FOR_A_LEXICAL_SEARCH)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert (payload["total_count"] > 0) is found
    if found:
        assert payload["results"][0]["file_path"] == "src/rank.py"
    assert done.stderr.splitlines()[-1] == "loaded: "
