"""bench.plots draws every plot of bench/README.md from the committed results."""

from __future__ import annotations

import re
from pathlib import Path

from bench import plots  # needs matplotlib, of the dev extra

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {"search_quality.png", "index_phases.png", "search_latency_by_size.png"}


def test_every_plot_is_drawn_from_the_committed_results(tmp_path: Path) -> None:
    written = plots.main(["--results", str(ROOT / "bench" / "results"), "--out", str(tmp_path)])
    names = {p.name for p in written}
    assert names == EXPECTED
    for path in written:
        assert path.parent == tmp_path
        assert path.read_bytes().startswith(b"\x89PNG"), path
        assert path.stat().st_size > 10_000, path


def test_bench_readme_embeds_each_committed_plot() -> None:
    readme = (ROOT / "bench" / "README.md").read_text()
    embedded = set(re.findall(r"!\[[^]]*\]\(plots/([^)]+\.png)\)", readme))
    committed = {p.name for p in (ROOT / "bench" / "plots").glob("*.png")}
    assert embedded == committed == EXPECTED
