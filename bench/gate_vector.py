"""A file's own vector, gated by the question's form (issue 36, round seven, the two findings
together).

``bench.file_vector`` found a file's centroid vector useless as a prior on every question in
hybrid mode: its cost falls on the own eval's questions about one function. ``bench.gate``
found that the grammatical form of a question (``bench.question_form``: a *mechanism* question
asks how a part works) tells the questions whose answer is a whole file apart from those, and
gated round six's import prior on it. Here the file vectors (``file_vector``'s units, the
same multiplier ``1 - s (1 - x_f)``) are gated the same way, alone and multiplied with the
gated import prior (``imports_pr`` or ``imports_in`` at ``--prior-strengths``). Cross-validated
as every round (leave one of the 18 groups out; admissible only if no eval block is below
today's in hybrid or lexical mode).

    python -m bench.gate_vector --dir DIR [--units centroid,centroid_w] [--scales minmax,gap]
        [--strengths 0.1,0.2,0.3,0.5] [--priors imports_pr] [--prior-strengths 0.3]
        [--repos a,@own] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from bench import centrality, file_vector, gate, proximity, replay_store
from bench.file_graph import FileKey, centralities, log_scaled
from bench.retrieval import Variant
from codebase_mcp_search.core.models import Chunk
from codebase_mcp_search.core.ranking import RankingConfig

MODES = centrality.MODES
TODAY = Variant(RankingConfig(), {})


def product(*makes: Any) -> Any:
    """A prior whose factor of a file is the product of ``makes``' factors (1 where one is
    silent)."""

    def make(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        out: dict[FileKey, float] = {}
        for m in makes:
            for k, f in m(chunks, profile).items():
                out[k] = out.get(k, 1.0) * f
        return out

    return make


def configurations(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Today's first; each unit x scale x strength gated, alone and with each gated prior."""
    priors: list[dict[str, Any]] = [{}]
    priors += [
        {"prior": m, "ps": float(s)}
        for m in args.priors.split(",")
        if m
        for s in args.prior_strengths.split(",")
    ]
    out: list[dict[str, Any]] = [{"unit": "none"}]
    out += [{"unit": "none", **p} for p in priors[1:]]
    for unit in args.units.split(","):
        for scale in args.scales.split(","):
            for s in (float(x) for x in args.strengths.split(",")):
                out += [{"unit": unit, "scale": scale, "s": s, **p} for p in priors]
    return out


def score(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    units = file_vector._units(args, datas)
    measures = [m for m in args.priors.split(",") if m]
    scaled: dict[str, dict[str, Any]] = {}
    if measures:
        cents = {g: centralities(d) for g, d in datas.items()}
        scaled = {m: {g: log_scaled(c[m]) for g, c in cents.items()} for m in measures}
    configs = configurations(args)
    results = []
    for c in configs:
        started = time.perf_counter()
        r: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
        for g, data in datas.items():
            makes = []
            if c["unit"] != "none":
                names = ("centroid", "synopsis") if c["unit"] == "both" else (c["unit"],)
                makes.append(file_vector._make(units, names, c["s"], c["scale"], datas, g))
            if c.get("prior"):
                makes.append(centrality.file_prior(scaled[c["prior"]][g], c["ps"]))
            gate._GATE.update(gate="mechanism" if makes else None, knobs={}, make=product(*makes))
            for mode, rows in asyncio.run(proximity.evaluate({g: data}, TODAY, MODES)).items():
                r[mode].update(rows)
        gate._GATE.update(gate=None, knobs={}, make=None)
        results.append(r)
        proximity._row(c, r, started)
    report = proximity._report(configs, results)
    report["hybrid_below_lexical"] = file_vector._below(report, report["groups"])
    return report


def main() -> None:
    gate.install()
    file_vector.install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--repos", default=None, help="only these groups (repositories, @cosqa, @own)")
    p.add_argument("--vectors", default="/tmp/file7/vec", help="the recordings' chunk vectors")
    p.add_argument("--cache", default="/tmp/file7", help="synopsis vectors")
    p.add_argument("--units", default="centroid,centroid_w")
    p.add_argument("--scales", default="minmax,gap")
    p.add_argument("--strengths", default="0.1,0.2,0.3,0.5")
    p.add_argument("--priors", default="imports_pr")
    p.add_argument("--prior-strengths", default="0.3")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir, args.repos)
    report = score(args, datas)
    report["command"] = "python -m bench.gate_vector " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v and k != "out"
    )
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(json.dumps({k: report[k] for k in ("held_out", "fitted") if k in report}, indent=1))


if __name__ == "__main__":
    main()
