"""A file's centrality in its repository as ranking evidence (issue 36, round six).

Code search engines and repository maps weigh a file by how much of the repository rests on
it (in-degree or PageRank of a file reference graph, ``bench.file_graph``). Twin files (libuv's
``win/tcp.c`` beside ``unix/tcp.c``; zod's ``v4/classic/schemas.ts`` and ``v4/mini/schemas.ts``,
which import ``v4/core/``) are 14 of the repository questions whose first answer is not
ranked first. Three priors, each a multiplier ``1 - s (1 - x_f)`` of the ranking's per-chunk
prior (``rerank._prior`` wrapped here, ``src/`` unchanged), measured through ``bench.replay``'s
recordings with the real ``SearchService``:

- **file:M**: ``x_f = log(1 + c_f) / log(1 + max c)`` over the repository's files (``c``: the
  measure ``M`` of ``file_graph.centralities``: ``imports_in``, ``imports_pr``, ``defuse_in``,
  ``defuse_pr``);
- **twin:M**: among the candidate files sharing a file name (entry files such as
  ``index.ts`` are named by their folder: no twins), each less central than the most central
  gets ``1 - s``, unless the query names one of its folders (``classic``, ``v3``);
  ``twinall:M`` without that exemption, ``twin@R:M`` only when the most central is at least
  ``R`` times as central;
- **candidates** (query time, no index): ``c_f`` the number of other candidate files whose
  candidate chunks name ``f``'s stem (``rerank.referenced_files``'s rule, from every
  candidate file), log-scaled over the candidates.

Cross-validated as ``bench.fit_ranker``: leave one of the 18 groups out, a configuration
admissible only if no eval block is below today's in hybrid or lexical mode; over the whole
pool and per family (``--families``).

    python -m bench.centrality graph --dir DIR [--repos a,b]   # the misses' centralities
    python -m bench.centrality score --dir DIR [--kinds K,..] [--strengths 0.1,0.2]
        [--repos a,b] [--out FILE]
    python -m bench.centrality cv --reports A.json,B.json [--out FILE]   # merged pools
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import fit_ranker, proximity, replay, replay_store, repo_search
from bench.file_graph import ENTRY, FileKey, centralities, log_scaled
from bench.retrieval import Variant, emit
from codebase_mcp_search.core.models import Chunk, ScoredChunk, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig, paths
from codebase_mcp_search.core.ranking.path_words import question_words, stem_boost_share

MODES = ("hybrid", "lexical", "semantic")
RANK_DEFAULTS = RankingConfig()
# The modules, not the names the packages re-export (``ranking.rerank`` is the function there).
RANK: Any = sys.modules["codebase_mcp_search.core.ranking.rerank"]
SERVICE: Any = sys.modules["codebase_mcp_search.core.services.search.service"]

# The prior in force: a function of the candidates (set per search) giving each file's factor.
_STATE: dict[str, Any] = {"factors": {}, "make": None}
_ORIGINAL_PRIOR = RANK._prior
_ORIGINAL_RERANK = SERVICE.rerank


def _prior(chunk: Chunk, factors: Any, trivial_prior: float) -> float:
    base: float = _ORIGINAL_PRIOR(chunk, factors, trivial_prior)
    extra: float = _STATE["factors"].get((chunk.repository_id, chunk.file_path), 1.0)
    return base * extra


def _rerank(
    candidates: Sequence[ScoredChunk], profile: Any, config: RankingConfig, definitions: Any = ()
) -> list[ScoredChunk]:
    make = _STATE["make"]
    chunks = [s.chunk for s in candidates] + list(definitions)
    _STATE["factors"] = make(chunks, profile) if make else {}
    return list(_ORIGINAL_RERANK(candidates, profile, config, definitions))


_INSTALLED: list[bool] = []


def install() -> None:
    """Put ``_prior`` and ``_rerank`` in the product's place, once. The scripts' entry points
    call it, so that importing this module (a unit test does) leaves the product's ranking as
    it is for the rest of the process."""
    if not _INSTALLED:
        RANK._prior = _prior
        SERVICE.rerank = _rerank
        _INSTALLED.append(True)


def file_prior(
    x: Mapping[FileKey, float], s: float, short: bool = False
) -> Callable[[list[Chunk], Any], Any]:
    factor = {k: 1.0 - s * (1.0 - v) for k, v in x.items()}
    if not short:
        return lambda chunks, profile: factor

    def make(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        # As the reference boost is gated (``rerank``): how a part works is told by a file
        # and the files it rests on; a long question describes one function, a symbol query
        # names a definition. Full for up to 4 words, 4 / words of it up to 8, none beyond.
        n = question_words(profile)
        if profile.is_symbol or n > RANK_DEFAULTS.reference_max_words:
            return {}
        share = stem_boost_share(profile, RANK_DEFAULTS.reference_words)
        return {
            k: 1.0 - s * share * (1.0 - x[k])
            for k in {(c.repository_id, c.file_path) for c in chunks}
            if k in x
        }

    return make


def twin_prior(
    c: Mapping[FileKey, float], s: float, unless_named: bool = True, ratio: float = 1.0
) -> Callable[[list[Chunk], Any], Any]:
    def make(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        # A twin whose folder the query names is asked for (``classic`` in "classic Zod v4
        # array schema", ``v3``), as ``paths.superseded`` exempts a version the query names.
        asked = {t.lower() for t in profile.tokens} if unless_named else set()
        by_name: dict[tuple[str, str], set[FileKey]] = defaultdict(set)
        for ch in chunks:
            name = ch.file_path.rsplit("/", 1)[-1]
            # An entry file (``index.ts``, ``mod.rs``) is named by its folder: no twin.
            if paths.split_path(ch.file_path)[1].lower() not in ENTRY:
                by_name[(ch.repository_id, name)].add((ch.repository_id, ch.file_path))
        out = {}
        for group in by_name.values():
            if len(group) > 1:
                most = max(c.get(k, 0.0) for k in group)
                out.update(
                    {
                        k: 1.0 - s
                        for k in group
                        if c.get(k, 0.0) * ratio < most
                        and c.get(k, 0.0) < most
                        and not asked.intersection(f.lower() for f in k[1].split("/")[:-1])
                    }
                )
        return out

    return make


def candidate_prior(s: float) -> Callable[[list[Chunk], Any], Any]:
    def make(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        words: dict[FileKey, set[str]] = defaultdict(set)
        for ch in chunks:
            words[(ch.repository_id, ch.file_path)] |= RANK._names_in(ch.content)
        count = {}
        for k in words:
            names = [
                n for n in paths.stem_names(k[1]) if len(n) >= 3 and n not in RANK._ENTRY_STEMS
            ]
            count[k] = sum(
                1
                for o, ws in words.items()
                if o != k and o[0] == k[0] and any(n in ws for n in names)
            )
        most = max(count.values(), default=0)
        if most == 0:
            return {}
        return {k: 1.0 - s * (1.0 - math.log1p(v) / math.log1p(most)) for k, v in count.items()}

    return make


def _configs(
    datas: dict[str, dict[str, Any]],
    cents: dict[str, dict[str, dict[FileKey, float]]],
    kinds: list[str],
    strengths: list[float],
) -> list[tuple[dict[str, Any], Callable[[str], Any]]]:
    """(description, group -> make) per configuration; the first is today's (no prior)."""
    out: list[tuple[dict[str, Any], Callable[[str], Any]]] = [({"kind": "none"}, _none)]
    for kind in kinds:
        for s in strengths:
            desc = {"kind": kind, "s": s}
            if kind.startswith(("file:", "fileshort:")):
                m = kind.split(":")[1]
                scaled = {g: log_scaled(cents[g][m]) for g in datas}
                short = kind.startswith("fileshort:")
                out.append((desc, functools.partial(_file_make, scaled, s, short)))
            elif kind.startswith("twin"):
                # twin:M, twinall:M (no exemption for a folder the query names), twin@R:M
                # (only a twin at least R times as central as the other counts).
                head, m = kind.split(":")
                named = not head.startswith("twinall")
                ratio = float(head.split("@")[1]) if "@" in head else 1.0
                per_group = {g: cents[g][m] for g in datas}
                out.append((desc, functools.partial(_twin_make, per_group, s, named, ratio)))
            elif kind == "candidates":
                out.append((desc, functools.partial(_candidates_make, s)))
    return out


def _none(group: str) -> None:
    return None


def _file_make(scaled: Any, s: float, short: bool, group: str) -> Any:
    return file_prior(scaled[group], s, short)


def _twin_make(cents: Any, s: float, named: bool, ratio: float, group: str) -> Any:
    return twin_prior(cents[group], s, named, ratio)


def _candidates_make(s: float, group: str) -> Any:
    return candidate_prior(s)


def score(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every configuration of ``--kinds`` x ``--strengths`` (and today's first) over ``datas``,
    in the three modes; the pool cross-validated."""
    cents = {g: centralities(d) for g, d in datas.items()}
    strengths = [float(s) for s in args.strengths.split(",")]
    configs = _configs(datas, cents, args.kinds.split(","), strengths)
    results = []
    for desc, make in configs:
        started = time.perf_counter()
        results.append(evaluate_with(datas, make))
        proximity._row(desc, results[-1], started)
    return proximity._report([d for d, _ in configs], results)


def evaluate_with(
    datas: dict[str, dict[str, Any]], make: Callable[[str], Any]
) -> dict[str, dict[str, list[float]]]:
    """Per mode and group, each question's metric under today's ranking with the prior
    ``make(group)`` in force (None: none)."""
    r: dict[str, dict[str, list[float]]] = {}
    today = Variant(RankingConfig(), {})
    for mode in MODES:
        r[mode] = {}
        for g, data in datas.items():
            _STATE["make"] = make(g)
            r[mode].update(asyncio.run(proximity.evaluate({g: data}, today, (mode,)))[mode])
    _STATE["make"] = None
    return r


def _family(c: dict[str, Any]) -> str:
    kind = str(c["kind"])
    return kind if kind.startswith(("file", "candidates")) else kind.split(":")[0]


def _in_family(family: str, c: dict[str, Any]) -> bool:
    return _family(c) == family


def cross_validate(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The pools of ``reports`` (each ``score``'s, today's first) merged, cross-validated over
    the whole pool and per family (today's and one family's configurations)."""
    configs = list(reports[0]["configurations"])
    rows = list(reports[0]["by_configuration_and_group"])
    for r in reports[1:]:
        configs += r["configurations"][1:]
        rows += r["by_configuration_and_group"][1:]
    groups = reports[0]["groups"]
    scores = {m: np.array([[row[m][g] for g in groups] for row in rows]) for m in MODES}
    out: dict[str, Any] = {
        "groups": groups,
        "configurations": configs,
        "by_configuration": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES}) for i in range(len(rows))
        ],
        "by_configuration_and_group": rows,
        "pool": fit_ranker.cross_validate(
            configs, scores, groups, {g: np.ones(len(configs), bool) for g in [*groups, "*"]}
        ),
        "by_family": {},
    }
    families: dict[str, Callable[[dict[str, Any]], bool]] = {
        fam: functools.partial(_in_family, fam)
        for fam in dict.fromkeys(_family(c) for c in configs[1:])
    }
    # The margins together (chosen after ``twin`` was seen to cost the own eval), and every
    # twin variant together.
    families["twin@ (every margin)"] = lambda c: str(c["kind"]).startswith("twin@")
    families["twin (every variant)"] = lambda c: str(c["kind"]).startswith("twin")
    for fam, member in families.items():
        mask = np.array([i == 0 or member(c) for i, c in enumerate(configs)])
        out["by_family"][fam] = fit_ranker.cross_validate(
            configs, scores, groups, dict.fromkeys([*groups, "*"], mask)
        )
    return out


def graph(datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """For every question whose hybrid first answer is not ranked first: the first-ranked
    file, the answer, whether they are twins, and both files' centralities."""
    out: dict[str, Any] = {}
    for g, data in datas.items():
        if g.startswith("@"):
            continue
        cents = centralities(data)
        svc = replay._service(data, Variant(RankingConfig(), {}))
        rows = []
        for q in data["queries"]:
            targets = [t if isinstance(t, str) else t["path"] for t in q.get("relevant", [])]
            hits = asyncio.run(
                svc.search(SearchQuery.build(q["query"], mode="hybrid", limit=10))
            ).hits
            files = list(dict.fromkeys(h.file_path for h in hits))
            where = [
                i
                for i, f in enumerate(files)
                if any(repo_search.path_matches(f, t) for t in targets)
            ]
            if not where or where[0] == 0:
                continue
            rid = hits[0].repository_id
            top, ans = files[0], files[where[0]]
            twin = top.rsplit("/", 1)[-1] == ans.rsplit("/", 1)[-1]
            rows.append(
                {
                    "query": q["query"],
                    "rank": where[0] + 1,
                    "top": top,
                    "answer": ans,
                    "twin": twin,
                    **{
                        m: [round(v[(rid, top)], 2), round(v[(rid, ans)], 2)]
                        for m, v in cents.items()
                    },
                }
            )
            if twin:
                print(g, rows[-1], flush=True)
        out[g] = rows
    return out


def main() -> None:
    install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("cmd", choices=["graph", "score", "cv"])
    p.add_argument("--dir", default=None)
    p.add_argument("--reports", default=None, help="cv: score reports to merge, today's first")
    p.add_argument("--repos", default=None, help="only these repositories (and no CoSQA, own)")
    p.add_argument("--strengths", default="0.05,0.1,0.2,0.3")
    p.add_argument(
        "--kinds",
        default="file:imports_in,file:imports_pr,file:defuse_in,file:defuse_pr,twin:imports_in,"
        "twin:imports_pr,twin:defuse_pr,twinall:imports_pr,candidates",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.cmd == "cv":
        reports = [json.loads(Path(f).read_text()) for f in args.reports.split(",")]
        emit(cross_validate(reports), args.out)
        return
    if not args.dir:
        p.error("--dir: the recordings of bench.replay record (all three benches)")
    datas = replay_store.load_recordings(args.dir, args.repos)
    emit(graph(datas) if args.cmd == "graph" else score(args, datas), args.out)


if __name__ == "__main__":
    main()
