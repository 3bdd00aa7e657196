"""What ``index`` and ``search`` tell a person: progress in a pipe, skipped files by reason,
the fix for a missing semantic model, and a lexical search that loads no model."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from codebase_mcp_search.core.errors import EmbedderUnavailable, Hint
from codebase_mcp_search.entrypoints.cli.errors import error_line
from codebase_mcp_search.entrypoints.cli.main import main
from codebase_mcp_search.entrypoints.cli.progress import HEARTBEAT_S, IndexProgress
from tests.embedding_servers import OLLAMA_MODEL, embedding_server


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "sample"
    (root / "src").mkdir(parents=True)
    (root / "src" / "retry.py").write_text(
        "def retry_with_backoff(fn, attempts=5):\n"
        '    """Call fn until it succeeds, sleeping longer after each failure."""\n'
        "    return fn()\n"
    )
    (root / "src" / "names.py").write_text("def slugify(text):\n    return text.lower()\n")
    (root / "README.md").write_text("# Sample\n\nRetries with backoff.\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("noise\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    return root


def cli(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [str(Path(sys.executable).with_name("codebase-mcp")), *argv],
        capture_output=True,
        text=True,
        env={**environ, **env},
        timeout=180,
        check=False,
    )


def test_a_piped_index_prints_one_plain_line_per_phase(repo: Path) -> None:
    with embedding_server() as model:  # a model: its vectors are the second layer
        proc = cli(
            "index",
            str(repo),
            CODEBASE_MCP_EMBEDDER="ollama",
            CODEBASE_MCP_OLLAMA_BASE_URL=model.url,
            CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL=OLLAMA_MODEL,
        )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr  # no control sequence in a pipe
    lines = proc.stderr.splitlines()
    assert lines[0] == f"indexing {repo}"  # before the store opens or a model loads
    searchable = next(i for i, line in enumerate(lines) if "is searchable now" in line)
    for expected in ("scanning", "chunking 4 files", "writing 4 files", "embedding 4 chunks"):
        assert expected in lines, proc.stderr
    # The lexical layer first, then its vectors.
    assert lines.index("scanning") < lines.index("chunking 4 files") < searchable
    assert lines.index("writing 4 files") < searchable < lines.index("embedding 4 chunks")
    assert "4 files indexed" in proc.stdout and "success" in proc.stdout
    assert "wait for a vector" not in proc.stdout  # both layers are built


def test_an_inline_embedder_indexes_in_one_layer(repo: Path) -> None:
    """Feature hashing embeds as chunks are written: no second pass, nothing left waiting."""
    proc = cli("index", str(repo), CODEBASE_MCP_EMBEDDER="hash")
    assert proc.returncode == 0, proc.stderr
    assert "is searchable now" not in proc.stderr and "embedding" not in proc.stderr
    assert "4 files indexed" in proc.stdout and "success" in proc.stdout
    assert "wait for a vector" not in proc.stdout and " embedded (" in proc.stdout


def test_plain_progress_repeats_a_long_phase_with_its_rate() -> None:
    now = [0.0]
    stream = io.StringIO()
    err = Console(file=io.StringIO(), force_terminal=False)
    with IndexProgress(err, "/r", live=False, stream=stream, clock=lambda: now[0]) as p:
        p.callback("chunking", 0, 10)
        p.callback("embedding", 0, 64)
        for step in range(1, 5):
            now[0] = step * HEARTBEAT_S / 2
            p.callback("embedding", step * 64, (step + 1) * 64)
        p.callback("writing", 10, 10)
        p.callback("done", 10, 10)
    lines = stream.getvalue().splitlines()
    assert lines[:3] == ["indexing /r", "chunking 10 files", "embedding 64 chunks"]
    rate = 4 * 64 / (2 * HEARTBEAT_S)
    assert f"embedding 128/192 chunks, {128 / HEARTBEAT_S:.1f} chunks/s" in lines
    assert "writing 10 files" in lines
    assert lines[-1] == f"embedded 256 chunks, {rate:.1f} chunks/s"


def test_quiet_progress_still_says_it_waits() -> None:
    stream = io.StringIO()
    err = Console(file=io.StringIO(), force_terminal=False, width=200)
    with IndexProgress(err, "/r", quiet=True, stream=stream) as p:
        p.callback("waiting", 0, 1)
        p.callback("scanning", 0, 1)
    assert stream.getvalue() == ""
    assert "another process is indexing /r" in err.file.getvalue()  # type: ignore[attr-defined]


def test_skipped_files_by_reason(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "skipped 2 files and 1 directory: " in out
    for reason in ("1 ignored", "1 binary", "1 excluded_dir"):
        assert reason in out
    assert "(--verbose lists them)" in out and "debug.log" not in out

    assert main(["index", str(repo), "--verbose"]) == 0
    out = capsys.readouterr().out
    for path in ("debug.log", "logo.png", "node_modules/"):
        assert path in out

    assert main(["index", str(repo), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["files_skipped"] == {"ignored": 1, "binary": 1, "excluded_dir": 1}
    assert {(s["path"], s["reason"]) for s in payload["skipped"]} == {
        ("debug.log", "ignored"),
        ("logo.png", "binary"),
        ("node_modules/", "excluded_dir"),
    }


def test_semantic_search_without_a_model_says_how_to_get_one(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "none")
    assert main(["index", str(repo), "--json"]) == 0
    capsys.readouterr()
    assert main(["search", "retry", "--mode", "semantic"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("EMBEDDER_UNAVAILABLE: ") and len(err.strip().splitlines()) == 1
    assert "--mode lexical" in err and "CODEBASE_MCP_EMBEDDER=auto" in err
    assert "hash" not in err and "mode='lexical'" not in err


def test_the_semantic_model_fix_is_in_cli_syntax() -> None:
    error = EmbedderUnavailable(
        "semantic search needs an embedding model", hint=Hint.SEMANTIC_MODEL
    )
    line = error_line(error)
    assert line.startswith("EMBEDDER_UNAVAILABLE: semantic search needs an embedding model; ")
    assert "--mode lexical" in line and "codebase-mcp index PATH" in line
    other = EmbedderUnavailable("Ollama at http://localhost:11434 does not answer")
    assert error_line(other) == str(other)  # other causes keep their own fix


# Passes once the facade builds the search service without choosing an embedder for a
# lexical search (issue 18, the search/MCP side): before, this search loaded torch (18 s).
@pytest.mark.parametrize("embedder", ["local", "auto"])
def test_a_lexical_search_loads_no_model(
    repo: Path, capsys: pytest.CaptureFixture[str], embedder: str
) -> None:
    assert main(["index", str(repo), "--json"]) == 0  # lexical only: EMBEDDER=none here
    capsys.readouterr()
    probe = (
        "import sys\n"
        "from codebase_mcp_search.entrypoints.cli.main import main\n"
        "code = main(['search', 'retry with backoff', '--mode', 'lexical', '--json'])\n"
        "heavy = ('torch', 'sentence_transformers', 'onnxruntime', 'tokenizers')\n"
        "print('LOADED=' + ','.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "CODEBASE_MCP_EMBEDDER": embedder,
            # auto would probe Ollama first: a closed port answers at once.
            "CODEBASE_MCP_OLLAMA_BASE_URL": "http://127.0.0.1:9",
        },
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "LOADED=\n" in proc.stderr, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert "src/retry.py" in {r["file_path"] for r in results}


def test_the_live_display_shows_each_phase_with_counts() -> None:
    screen = io.StringIO()
    err = Console(file=screen, force_terminal=True, width=120)
    with IndexProgress(err, "/r") as p:
        for phase, done, total in (
            ("scanning", 0, 1),
            ("scanning", 1, 1),
            ("chunking", 0, 7),
            ("embedding", 32, 64),
            ("writing", 3, 7),
            ("embedding", 90, 90),
            ("writing", 7, 7),
            ("optimizing", 0, 1),
            ("done", 7, 7),
        ):
            p.callback(phase, done, total)  # type: ignore[arg-type]
            err.file.flush()
        p._bar.refresh()  # type: ignore[union-attr]
        shown = screen.getvalue()
    for text in ("chunking", "7 files", "embedding", "90/90 chunks", "7/7 files", "optimizing"):
        assert text in shown


def test_one_file_or_chunk_is_singular() -> None:
    stream = io.StringIO()
    err = Console(file=io.StringIO(), force_terminal=False)
    with IndexProgress(err, "/r", live=False, stream=stream) as p:
        p.callback("chunking", 0, 1)
        p.callback("writing", 1, 1)
    with IndexProgress(err, "/r", live=False, stream=stream, announce=False) as p:
        p.callback("embedding", 0, 1)
    assert stream.getvalue().splitlines() == [
        "indexing /r",
        "chunking 1 file",
        "writing 1 file",
        "embedding 1 chunk",
    ]


def test_embedding_progress_counts_the_whole_layer_across_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors are built and stored a few at a time: the count goes on over the batches,
    out of every chunk still without a vector (never each batch's own, which looks done)."""
    from tests.integration.test_mcp_jobs import write_repo

    root = write_repo(tmp_path / "repo", 10)
    monkeypatch.setattr("codebase_mcp_search.entrypoints.cli.progress.HEARTBEAT_S", 0.0)
    with embedding_server() as model:
        for var, value in {
            "CODEBASE_MCP_EMBEDDER": "ollama",
            "CODEBASE_MCP_OLLAMA_BASE_URL": model.url,
            "CODEBASE_MCP_OLLAMA_EMBEDDING_MODEL": OLLAMA_MODEL,
            "CODEBASE_MCP_VECTOR_BATCH_CHUNKS": "4",
        }.items():
            monkeypatch.setenv(var, value)
        assert main(["index", str(root)]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("embedding ")]
    assert lines[0] == "embedding 20 chunks"
    counts = [ln.split()[1].rstrip(",") for ln in lines[1:]]
    assert counts == [f"{n}/20" for n in range(4, 21, 4)], lines
