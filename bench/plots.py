"""The plots of bench/README.md, drawn from bench/results/*.json only (matplotlib, PNG).

- ``search_quality.png``: NDCG@10 per repository of the repository benchmark's development
  half (``repo_search_onnx_issue19.json``), and the overall figures beside the published
  peers (``repo_search_published.json``, transcribed from ../shared/bench/repo-search/README.md;
  the development-half figures from the first file's ``published_dev_half``).
- ``index_phases.png``: when each phase of a cold index of 10,000 files ran
  (``index_phases_postgres.json``), and cold index against re-index times, that run's and
  the recorded ones (``index_throughput_postgres.json``).
- ``search_latency_by_size.png``: search latency p50 / p95 by corpus size, no filter
  (``search_latency_size_*.json``).

    python -m bench.plots [--results bench/results] [--out bench/plots]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, and no GUI toolkit to import

# pyplot after the backend is chosen.
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

HERE = Path(__file__).resolve().parent
MODES = ("lexical", "hybrid", "semantic")
COLOURS = {"lexical": "#4C72B0", "hybrid": "#DD8452", "semantic": "#55A868"}
PEER = "#8C8C8C"
PEER_DEV = "#C44E52"
# Progress phases in pipeline order, as the CLI names them (ProgressPhase).
PHASES = ("open", "scanning", "chunking", "embedding", "writing", "optimizing")
PHASE_LABELS = {
    "open": "open the store\n(embedded server: initdb, start)",
    "scanning": "scanning",
    "chunking": "chunking",
    "embedding": "embedding (hash)",
    "writing": "writing",
    "optimizing": "optimizing\n(last ANN segment, vacuum)",
}
# A project under this many vectors has no ANN index: search is exact (docs/storage.md).
ANN_FROM_VECTORS = 10_000


def _load(results: Path, name: str) -> Any:
    return json.loads((results / name).read_text())


def _save(fig: Figure, path: Path) -> None:
    # No "Software" stamp: the PNG changes only when the picture does.
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def search_quality(results: Path, out: Path) -> Path:
    ours = _load(results, "repo_search_onnx_issue19.json")
    published = _load(results, "repo_search_published.json")
    per_repo = {m: ours[f"{m}/default"]["by_repository"] for m in MODES}
    repos = sorted(per_repo["hybrid"], key=lambda r: per_repo["hybrid"][r])

    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 6.6), gridspec_kw={"width_ratios": [2, 1]})
    width = 0.27
    for i, mode in enumerate(MODES):
        xs = [j + (i - 1) * width for j in range(len(repos))]
        left.bar(xs, [per_repo[mode][r] for r in repos], width, label=mode, color=COLOURS[mode])
    for name, score in ours["published_dev_half"].items():
        short = name.split(" (")[0]
        style = "--" if short.startswith("semble") else ":"
        left.axhline(
            score,
            color=PEER_DEV,
            linestyle=style,
            linewidth=1.3,
            label=f"{short}: published, all 16 ({score:.3f})",
        )
    left.set_xticks(range(len(repos)), repos, rotation=50, ha="right")
    left.set_xlim(-0.6, len(repos) - 0.4)
    left.set_ylim(0, 1.17)  # room for the legend above the bars
    left.set_ylabel("NDCG@10 (mean over the repository's questions)")
    left.set_title(
        f"Per repository: development half ({ours['repositories']} repositories, "
        f"{ours['queries']} questions); hybrid and semantic with the default ONNX MiniLM",
        fontsize=10,
    )
    left.legend(loc="upper left", ncol=3, fontsize=8, framealpha=0.95)
    left.grid(axis="y", alpha=0.3)

    # Two groups, each sorted: the development half (ours and the peers' published figures on
    # it), then the peers' published figures on the whole benchmark. A scope is not a method.
    dev: list[tuple[str, float, str]] = [
        (f"ours, {m}", ours[f"{m}/default"]["ndcg@10"], COLOURS[m]) for m in MODES
    ]
    dev += [(name, score, PEER_DEV) for name, score in ours["published_dev_half"].items()]
    whole = [(p["method"], p["ndcg@10"], PEER) for p in published["methods"]]
    groups = [
        (f"development half ({ours['repositories']} repositories)", dev),
        (f"whole benchmark ({published['repositories']} repositories), published", whole),
    ]
    y = 0.0
    ticks: list[tuple[float, str]] = []
    for title, rows in groups:
        right.text(0, y - 0.2, title, fontsize=8.5, fontweight="bold", va="bottom")
        y += 0.75
        for label, score, colour in sorted(rows, key=lambda row: -row[1]):
            right.barh(y, score, color=colour, height=0.8)
            right.text(score + 0.01, y, f"{score:.3f}", va="center", fontsize=8)
            ticks.append((y, _wrap(label, 40)))
            y += 1
        y += 0.9
    right.set_yticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=8)
    right.set_ylim(y - 0.6, -0.9)
    right.set_xlim(0, 1.0)
    right.set_xlabel("NDCG@10 (mean over repositories)")
    right.set_title("Overall, beside the published peers", fontsize=10)
    right.grid(axis="x", alpha=0.3)
    fig.suptitle("Search quality: repository-level code search benchmark", fontsize=12)
    fig.tight_layout()
    path = out / "search_quality.png"
    _save(fig, path)
    return path


def _wrap(label: str, width: int = 30) -> str:
    """Break a long method name at the last space before ``width``."""
    if len(label) <= width or " " not in label[:width]:
        return label
    cut = label.rfind(" ", 0, width)
    return label[:cut] + "\n" + _wrap(label[cut + 1 :], width)


def index_phases(results: Path, out: Path) -> Path:
    run = _load(results, "index_phases_postgres.json")
    recorded = _load(results, "index_throughput_postgres.json")
    spans = run["phases"]
    total = run["full_index_seconds_all"][-1]  # the phases are the last cold run's
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(10, 7.4), gridspec_kw={"height_ratios": [1.6, 1]}
    )
    phases = [p for p in PHASES if p in spans]
    for y, phase in enumerate(phases):
        # "open" is a moment (open_codebase returned): its bar is the time before it.
        start, end = (0.0, spans[phase][0]) if phase == "open" else spans[phase]
        top.barh(y, max(end - start, total / 400), left=start, color="#4C72B0")
        top.text(end + total / 100, y, f"{start:.1f}-{end:.1f} s", va="center", fontsize=8)
    top.set_yticks(range(len(phases)), [PHASE_LABELS[p] for p in phases], fontsize=8)
    top.invert_yaxis()
    top.set_xlim(0, total * 1.12)
    top.set_xlabel("seconds since the start of the run (first to last progress report)")
    top.set_title(
        f"A cold index of {run['files']:,} generated files ({run['chunks']:,} chunks), "
        f"embedded Postgres, hash embedder: {total:g} s\n(the phases overlap batch by batch; "
        "the machine was shared with other work: compare the runs below)",
        fontsize=10,
    )
    top.grid(axis="x", alpha=0.3)

    sources = [
        ("index_throughput_postgres.json", recorded, "#4C72B0"),
        ("index_phases_postgres.json (the run above is its last)", run, "#A1C9F4"),
    ]
    kinds = [
        ("cold index", "full_index_seconds_median"),
        ("re-index, nothing changed", "unchanged_reindex_seconds_median"),
        ("re-index, 100 files edited", "edit_reindex_seconds"),
    ]
    height = 0.38
    for i, (label, data, colour) in enumerate(sources):
        ys = [k + (i - 0.5) * height for k in range(len(kinds))]
        values = [data[key] for _, key in kinds]
        bottom.barh(ys, values, height, label=label, color=colour)
        for at, value in zip(ys, values, strict=True):
            bottom.text(value * 1.08, at, f"{value:g} s", va="center", fontsize=8)
    bottom.set_xscale("log")
    bottom.set_xlim(0.1, 100)
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bottom.set_yticks(range(len(kinds)), [k for k, _ in kinds], fontsize=8)
    bottom.invert_yaxis()
    bottom.set_xlabel("seconds (log scale); medians of 3 runs, the edit run once")
    bottom.set_title(
        "The same 10,000 files, embedded Postgres: a re-index costs a hash per unchanged file",
        fontsize=10,
    )
    bottom.legend(fontsize=8, loc="lower right")
    bottom.grid(axis="x", alpha=0.3, which="both")
    fig.suptitle("Index time", fontsize=12)
    fig.tight_layout()
    path = out / "index_phases.png"
    _save(fig, path)
    return path


def search_latency_by_size(results: Path, out: Path) -> Path:
    runs = sorted(
        (json.loads(p.read_text()) for p in results.glob("search_latency_size_*.json")),
        key=lambda r: r["chunks"],
    )
    if not runs:
        raise FileNotFoundError(f"no search_latency_size_*.json in {results}")
    sizes = [r["chunks"] for r in runs]
    fig, ax = plt.subplots(figsize=(9, 5.4))
    for mode in MODES:
        cells = [r[f"{mode}/none"] for r in runs]
        ax.plot(sizes, [c["p50_ms"] for c in cells], "o-", color=COLOURS[mode], label=f"{mode} p50")
        ax.plot(
            sizes, [c["p95_ms"] for c in cells], "s--", color=COLOURS[mode], label=f"{mode} p95"
        )
    ax.axvline(ANN_FROM_VECTORS, color="#8C8C8C", linestyle=":", linewidth=1)
    ax.annotate(
        "HNSW segments from\n10,000 vectors; exact below",
        (ANN_FROM_VECTORS, 0.97),
        xycoords=("data", "axes fraction"),
        xytext=(4, 0),
        textcoords="offset points",
        va="top",
        fontsize=8,
        color="#555555",
    )
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes], fontsize=8)
    ax.minorticks_off()
    ax.set_ylim(0, None)
    ax.set_xlabel(
        "chunks in the project (log scale): nested parts of CPython's standard library, "
        "then all of it, then with numpy, pip and mypy"
    )
    ax.set_ylabel("latency per search, ms (no filter, limit 10)")
    ax.set_title(
        "Search latency by corpus size: Codebase.search end to end, embedded Postgres,\n"
        "ranking stack on, query vectors precomputed (hash embedder), 60 CoSQA questions x 2 "
        "passes, one run per corpus",
        fontsize=10,
    )
    ax.legend(fontsize=8, ncol=3, loc="upper left", bbox_to_anchor=(0, -0.14))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out / "search_latency_by_size.png"
    _save(fig, path)
    return path


PLOTS = (search_quality, index_phases, search_latency_by_size)


def main(argv: Sequence[str] | None = None) -> list[Path]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", type=Path, default=HERE / "results")
    p.add_argument("--out", type=Path, default=HERE / "plots")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written = [plot(args.results, args.out) for plot in PLOTS]
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()
