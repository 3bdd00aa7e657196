"""The local model (all-MiniLM-L6-v2 via sentence-transformers) end to end on real code.

Runs where the ``local`` extra is installed, as CI installs it (scripts/test.sh); the module is
not collected elsewhere, so the suite never counts a skipped model test as coverage.
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import httpx
import pytest

from codebase_mcp_search.adapters.local import LocalEmbedder
from codebase_mcp_search.core.models import SearchMode
from codebase_mcp_search.entrypoints.embedders import choose_embedder
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import unused_port

# Needs torch (the local extra): not in the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.torch

STDLIB = Path(sysconfig.get_paths()["stdlib"])

# Paraphrases that share no identifier with the function they describe.
PARAPHRASES = [
    ("turn a shell wildcard pattern into a regular expression", "fnmatch.py", "translate"),
    ("escape a string so it can be used safely as one shell argument", "shlex.py", "quote"),
    ("remove the indentation that every line has in common", "textwrap.py", "dedent"),
]


@pytest.fixture
def stdlib_repo(tmp_path: Path) -> Path:
    """A small real repository: a few modules of this Python's standard library."""
    root = tmp_path / "stdlib-slice"
    root.mkdir()
    for name in ("colorsys.py", "shlex.py", "fnmatch.py", "textwrap.py"):
        shutil.copy(STDLIB / name, root / name)
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.slow
async def test_finds_functions_by_paraphrase_in_postgres(
    stdlib_repo: Path, pg_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "local")
    # The embedder's own ranking: the ranking stack would rank a second function of a file
    # below other files' (its per-file decay), which is not what this test is about.
    monkeypatch.setenv("CODEBASE_MCP_RANKING", "false")
    async with open_codebase(Settings()) as cb:
        indexed = await cb.index(stdlib_repo)
        assert indexed.status.value == "success"
        assert indexed.chunks_embedded == indexed.chunks_created > 50
        # Some stdlib functions are longer than MiniLM's 256 tokens: embedded from their start.
        assert indexed.chunks_truncated > 0
        (repo,) = await cb.repositories()
        assert repo.embedding_model == "local/sentence-transformers/all-MiniLM-L6-v2"
        assert repo.embedding_dimension == 384
        for query, path, symbol in PARAPHRASES:
            result = await cb.search(query, mode=SearchMode.SEMANTIC.value, limit=3)
            found = [(h.file_path, h.symbol) for h in result.hits]
            assert (path, symbol) in found, (query, found)


async def test_auto_without_ollama_or_the_onnx_model_takes_the_local_model(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    settings = Settings(embedder="auto", ollama_base_url=url, onnx_model_dir=tmp_path / "none")
    async with httpx.AsyncClient() as client:
        choice = await choose_embedder(settings.model_dump(), client)
    assert choice.chosen == "local" and choice.embedder is not None
    assert choice.embedder.model == "local/sentence-transformers/all-MiniLM-L6-v2"
    assert choice.embedder.dimension == 384
    assert "not reachable" in choice.reason and "CODEBASE_MCP_ONNX_MODEL_DIR=" in choice.reason


async def test_vectors_are_unit_length_and_queries_rank_related_code() -> None:
    embedder = LocalEmbedder()
    await embedder.open()
    docs = await embedder.embed_documents(
        ["def read_csv(path):\n    return list(csv.reader(open(path)))", "body { color: red; }"]
    )
    for v in docs.vectors:
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-4)
    q = await embedder.embed_query("load rows from a comma separated file")
    near, far = (sum(a * b for a, b in zip(q, v, strict=True)) for v in docs.vectors)
    assert near > far + 0.1
