"""Probes of round seven's file vectors (``bench.file_vector``; issue 36): where they would
move today's misses, what extra candidates could bring, what a product version would cost.

    python -m bench.file_vector_probe pairs --dir DIR     # misses: is the answer's file nearer?
    python -m bench.file_vector_probe reach --dir DIR     # answers absent from the candidates
    python -m bench.file_vector_probe synopses --dir DIR --cache D   # embed afresh: texts/s
    python -m bench.file_vector_probe cost [--workload DIR]   # files (one vector each)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench import centrality, file_vector, replay, replay_store, repo_search
from bench.file_graph import FileKey
from bench.retrieval import Variant, emit
from codebase_mcp_search.core.models import Chunk, SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig


def _bucket(rank: int) -> str:
    return "1" if rank == 1 else "2-3" if rank <= 3 else "4-10" if rank <= 10 else ">10"


def pairs(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per unit, over the repository questions (hybrid, today's order): where the first
    answer file is ranked 2nd-10th, how often its file vector is nearer the query than the
    first-ranked file's (and the twins among them); where it is ranked first, how often the
    second file's is nearer (what a prior risks)."""
    units = file_vector._units(args, datas)
    out: dict[str, Any] = {}
    for name in units:
        tally: dict[str, int] = defaultdict(int)
        for g, data in datas.items():
            if g.startswith("@"):
                continue
            svc = replay._service(data, Variant(RankingConfig(), {}))
            for q in data["queries"]:
                targets = [t if isinstance(t, str) else t["path"] for t in q.get("relevant", [])]
                hits = asyncio.run(
                    svc.search(SearchQuery.build(q["query"], mode="hybrid", limit=10))
                ).hits
                if not hits:
                    continue
                rid = hits[0].repository_id
                files = list(dict.fromkeys(h.file_path for h in hits))
                where = [
                    i
                    for i, f in enumerate(files)
                    if any(repo_search.path_matches(f, t) for t in targets)
                ]
                if not where or len(files) < 2:
                    continue
                qv = np.asarray(data["vectors"][q["query"]], np.float32)
                u = units[name][g]
                if where[0] == 0:
                    other = next((i for i in range(1, len(files)) if i not in where), None)
                    if other is None:
                        continue
                    near = float(u[(rid, files[other])] @ qv) > float(u[(rid, files[0])] @ qv)
                    tally["first: the next file nearer"] += near
                    tally["first"] += 1
                    continue
                ans, top = files[where[0]], files[0]
                near = float(u[(rid, ans)] @ qv) > float(u[(rid, top)] @ qv)
                twin = ans.rsplit("/", 1)[-1] == top.rsplit("/", 1)[-1]
                tally["missed"] += 1
                tally["missed: the answer nearer"] += near
                tally["twins"] += twin
                tally["twins: the answer nearer"] += twin and near
        out[name] = dict(tally)
        print(name, json.dumps(out[name]), flush=True)
    return out


def reach(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What extra candidates could bring: per unit, each repository question's answer files
    (``relevant`` and ``secondary``) absent from hybrid's candidates, by the rank of their file vector's cosine
    among all the repository's files (1, 2-3, 4-10, beyond)."""
    units = file_vector._units(args, datas)
    seen: list[set[FileKey]] = []

    def record(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        seen.append({(c.repository_id, c.file_path) for c in chunks})
        return {}

    out: dict[str, Any] = {name: defaultdict(int) for name in units}
    centrality._STATE["make"] = record
    for g, data in datas.items():
        if g.startswith("@"):
            continue
        svc = replay._service(data, Variant(RankingConfig(), {}))
        files = sorted({(c.repository_id, c.file_path) for c in data["chunks"]})
        for q in data["queries"]:
            seen.clear()
            asyncio.run(svc.search(SearchQuery.build(q["query"], mode="hybrid", limit=10)))
            cands = set().union(*seen)
            qv = np.asarray(data["vectors"][q["query"]], np.float32)
            for t in [*q.get("relevant", []), *q.get("secondary", [])]:
                path = t if isinstance(t, str) else t["path"]
                mine = [k for k in files if repo_search.path_matches(k[1], path)]
                for name, per_group in units.items():
                    u, tally = per_group[g], out[name]
                    tally["targets"] += 1
                    if not mine:
                        tally["not indexed"] += 1
                        continue
                    if any(k in cands for k in mine):
                        tally["among the candidates"] += 1
                        continue
                    cos = [float(u[k] @ qv) for k in files]
                    best = max(float(u[k] @ qv) for k in mine)
                    rank = 1 + sum(c > best for c in cos)
                    tally[f"absent, file vector rank {_bucket(rank)}"] += 1
    centrality._STATE["make"] = None
    for name, tally in out.items():
        print(name, json.dumps(tally), flush=True)
    return {k: dict(v) for k, v in out.items()}


def cost(args: argparse.Namespace) -> dict[str, Any]:
    """Files of the workload (one vector each), and what the vectors would take."""
    root = Path(args.workload)
    tars = sorted(root.glob("*.tar.gz"))
    if tars:
        with tarfile.open(tars[0]) as t:
            files = [m.name for m in t.getmembers() if m.isfile()]
    else:
        files = [str(p) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    dim = 384
    return {
        "workload": str(root),
        "files": len(files),
        "extra_vectors": len(files),
        "bytes_int8": len(files) * dim,
        "bytes_float32": len(files) * dim * 4,
    }


def synopses_cmd(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for g, data in datas.items():
        _, info = file_vector.synopsis_vectors(g, data, args.cache)
        info["examples"] = list(file_vector.synopses(data).values())[:3]
        out[g] = info
        print(g, json.dumps(info), flush=True)
    return out


def main() -> None:
    centrality.install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("cmd", choices=["pairs", "reach", "synopses", "cost"])
    p.add_argument("--dir", default=None)
    p.add_argument("--repos", default=None, help="only these groups (repositories, @cosqa, @own)")
    p.add_argument("--vectors", default="/tmp/file7/vec", help="the recordings' chunk vectors")
    p.add_argument("--cache", default="/tmp/file7", help="synopsis vectors")
    p.add_argument("--units", default="centroid,centroid_w,synopsis")
    p.add_argument("--workload", default="/work/shared/bench/baseline-10k")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.cmd == "cost":
        emit(cost(args), args.out)
        return
    if not args.dir:
        p.error("--dir: the recordings of bench.replay record (all three benches)")
    datas = replay_store.load_recordings(args.dir, args.repos)
    run = {"pairs": pairs, "reach": reach, "synopses": synopses_cmd}[args.cmd]
    emit(run(args, datas), args.out)


if __name__ == "__main__":
    main()
