"""Pseudo-relevance feedback, gated by the question's form (issue 36, round seven, two findings
together).

``bench.prf`` found that expanding the lexical query from the first results gains questions
about how a part works (lexical mode's architecture category 0.7228 -> 0.7425) and loses more
on questions about one function, and that nothing measured at search time told the two apart.
``bench.gate``'s question form does (``bench.question_form``: a *mechanism* question asks how
a part works). Here a question's lexical list is the expanded one (``bench.prf_lists``'s
``rebuild``, the same feedback) only when the question is a mechanism question; every other
list stays today's. Cross-validated as every round (leave one of the 18 groups out;
admissible only if no eval block is below today's in hybrid or lexical mode).

    python -m bench.gate_prf --dir DIR [--feedback lex:3:10:0.1,sem:3:10:0.1,...] [--repos a,@own]
        [--out FILE]

A lexical list belongs to every question asking its terms (two questions with the same
analysed terms share one): it is expanded when any of them is a mechanism question.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench import file_vector, prf, proximity, replay_store
from bench.prf_lists import Feedback, Index, rebuild
from bench.question_form import is_mechanism
from codebase_mcp_search.core import lexical

MODES = prf.MODES
GRID = [
    f"{src}:{k}:{m}:{w}"
    for src in ("lex", "sem")
    for k in (3, 10)
    for m in (10, 20)
    for w in (0.1, 0.2, 0.3)
]


def mechanism_terms(data: dict[str, Any]) -> set[tuple[str, ...]]:
    """The analysed terms of the recording's mechanism questions."""
    texts = [q["query"] if isinstance(q, dict) else q[0] for q in data["queries"]]
    return {tuple(lexical.query_terms(t)) for t in texts if is_mechanism(t)}


def gated(data: dict[str, Any], fb: Feedback, index: Index) -> dict[str, Any]:
    """``data`` with the lexical lists of its mechanism questions expanded under ``fb``."""
    full = rebuild(data, fb, index)
    if full is data:
        return data
    asked = mechanism_terms(data)
    lists = {k: full["lexical"][k] if k[0] in asked else v for k, v in data["lexical"].items()}
    return {**data, "lexical": lists}


def score(datas: dict[str, dict[str, Any]], names: list[str]) -> dict[str, Any]:
    indexes = {g: Index(d) for g, d in datas.items()}
    configs: list[dict[str, Any]] = []
    rows: list[dict[str, dict[str, list[float]]]] = []
    for i, name in enumerate(["none", *names]):
        started = time.perf_counter()
        fb = Feedback.parse(name)
        rebuilt = {g: gated(d, fb, indexes[g]) for g, d in datas.items()}
        r = prf._rows(rebuilt, MODES if i == 0 else prf.CHANGED[fb.source or "lex"])
        for m in MODES:
            r.setdefault(m, rows[0][m] if rows else {})
        configs.append({"feedback": name, "gate": "mechanism"})
        rows.append(r)
        proximity._row(configs[-1], r, started)
    report = proximity._report(configs, rows)
    report["hybrid_below_lexical"] = file_vector._below(report, report["groups"])
    report["mechanism_questions"] = {
        g: sum(
            is_mechanism(q["query"] if isinstance(q, dict) else q[0]) for q in datas[g]["queries"]
        )
        for g in datas
    }
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--repos", default=None, help="only these groups (repositories, @cosqa, @own)")
    p.add_argument("--feedback", default=",".join(GRID))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir, args.repos)
    report = score(datas, args.feedback.split(","))
    report["command"] = f"python -m bench.gate_prf --dir {args.dir} --feedback {args.feedback}"
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("held_out", "fitted")}, indent=1))


if __name__ == "__main__":
    main()
