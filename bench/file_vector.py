"""A file's own vector as ranking evidence (issue 36, round seven).

Every dense signal of the stack is per chunk: a file is found through its best chunks, and
the ranking's file evidence aggregates the scores of the candidate chunks that happened to
be retrieved. Measured here: dense evidence that sees the whole file, per candidate file,
``cos(query, u_f)`` with ``u_f`` one of

- **centroid**: the normalised mean of every chunk vector of the file (``centroid_w``: each
  weighted by the chunk's tokens);
- **synopsis**: the product's default embedder (``Settings(embedder="onnx")``, the int8
  all-MiniLM-L6-v2) over a short text per file: its path words, the names it defines (the
  last part of each chunk's symbol, in file order) and the first comment or docstring line
  of its first chunk (``synopsis_text``), truncated by the embedder at the model's budget;
- **both**: the mean of the centroid's and the synopsis' cosines.

Used as a file prior: a multiplier ``1 - s (1 - x_f)`` of the ranking's per-chunk prior of
every candidate of ``f`` (``bench.centrality``'s wrap of ``rerank._prior``; ``src/``
unchanged), ``x_f`` the cosine scaled over the query's candidate files: ``minmax`` (the
best 1, the worst 0) or ``gap`` (``max(0, 1 - (best - cos) / 0.2)``: a fixed cosine width,
so near-ties stay near). The query vector is the recording's; in lexical mode the prior
makes lexical mode use the model (reported, not a lexical-mode candidate as it stands).

Chunk vectors are the recordings' own (the exact int8 graph; ``--vectors`` holds
``bench.replay``'s caches, keyed by content hash: checked against the recorded cosines to
1e-7). Synopses are embedded once and cached under ``--cache`` (today's int8 graph, which
rounds slightly differently from the recordings' exact one: cosine about 0.999).

    python -m bench.file_vector score --dir DIR [--units centroid,centroid_w,synopsis,both]
        [--scales minmax,gap] [--strengths 0.05,0.1,0.2,0.3] [--repos a,b] [--out FILE]

``bench.file_vector_probe`` embeds the synopses alone (texts/s), asks where the file vectors
would move today's misses and what extra candidates could bring, and counts a workload's files.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import glob
import hashlib
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import centrality, fit_ranker, proximity, replay_store, repo_search
from bench.file_graph import FileKey
from bench.harness import open_bench
from bench.retrieval import emit
from codebase_mcp_search.core.models import Chunk
from codebase_mcp_search.entrypoints.settings import Settings

MODES = centrality.MODES
GAP = 0.2
_QUERY: dict[str, str] = {"text": ""}
_CUT: dict[str, int] = {}
_ORIGINAL_SEARCH = centrality.SERVICE.SearchService.search


async def _search(self: Any, query: Any) -> Any:
    # The prior needs the query's vector, which the ranking is not handed: note its text.
    _QUERY["text"] = query.text
    return await _ORIGINAL_SEARCH(self, query)


def install() -> None:
    """``centrality``'s wrappers, and the search noting its query's text (see
    ``centrality.install``)."""
    centrality.install()
    centrality.SERVICE.SearchService.search = _search


def _load_npz(path: str) -> dict[str, np.ndarray]:
    z = np.load(path, allow_pickle=False)
    return dict(zip(z["hashes"].tolist(), z["vectors"], strict=True))


def chunk_vectors(group: str, vec_dir: str) -> dict[str, np.ndarray]:
    """Content hash -> vector, from ``bench.replay``'s / ``bench.repo_search``'s caches."""
    if group == "@cosqa":
        return _load_npz(f"{vec_dir}/replay_onnx_cosqa.npz")
    if group == "@own":
        out: dict[str, np.ndarray] = {}
        for f in sorted(glob.glob(f"{vec_dir}/replay_onnx_own_*.npz")):
            out.update(_load_npz(f))
        return out
    return _load_npz(f"{vec_dir}/repo_search_onnx_{group}.npz")


def _files(data: dict[str, Any]) -> dict[FileKey, list[Chunk]]:
    files: dict[FileKey, list[Chunk]] = defaultdict(list)
    for c in data["chunks"]:
        files[(c.repository_id, c.file_path)].append(c)
    for cs in files.values():
        cs.sort(key=lambda c: (c.start_line, c.end_line))
    return files


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def centroids(
    data: dict[str, Any], vecs: Mapping[str, np.ndarray], weighted: bool
) -> dict[FileKey, np.ndarray]:
    """Each file's normalised mean chunk vector (weighted by tokens if ``weighted``)."""
    out = {}
    for k, cs in _files(data).items():
        w = np.array([max(1, c.token_count or 1) if weighted else 1 for c in cs], dtype=np.float32)
        m = np.stack([vecs[c.content_hash] for c in cs])
        out[k] = _unit((w[:, None] * m).sum(axis=0))
    return out


_COMMENT = re.compile(r"^\s*(?:#+!?|//+!?|/\*+!?|\*+/?|--+|;+|%+|\"\"\"|\'\'\'|<!--)")
# A licence block is skipped whole; a pragma or a rule line is no description.
_LICENCE = re.compile(r"copyright|licen[cs]e|spdx|permission|warrant|all rights", re.IGNORECASE)
_PRAGMA = re.compile(
    r"^(?:@|!|eslint|prettier|noqa|pylint|nolint|clang-format|go:|\+build|-\*-|vim?:|type:"
    r"|frozen_string_literal|(?:en)?coding[:=])"
    r"|^(?:include|define|ifn?def|if|elif|else|endif|pragma|undef|import|error)\b|^[=*#/~-]*$",
    re.IGNORECASE,
)
_MAX_NAMES = 64


def doc_line(first: Chunk) -> str:
    """The first line of the first comment or docstring block among the first chunk's first
    40 lines that is no licence (a block naming one is skipped whole), shebang or pragma;
    '' if none."""
    blocks: list[list[str]] = [[]]
    for line in first.content.splitlines()[:40]:
        m = _COMMENT.match(line)
        rest = line[m.end() :].strip(" \t*/\"'#-") if m else ""
        if m is None or not rest:
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(rest)
    for block in blocks:
        if not block or any(_LICENCE.search(x) for x in block):
            continue
        for x in block:
            if not _PRAGMA.search(x) and re.search(r"[A-Za-z]{3}", x):
                return x[:160]
    return ""


def synopsis_text(path: str, chunks: Sequence[Chunk]) -> str:
    """``src unix core.c: uv_run uv_loop_alive ... - <first doc line>``."""
    words = " ".join(p for p in path.split("/") if p)
    names: dict[str, None] = {}
    for c in chunks:
        if c.symbol:
            last = re.split(r"::|\.|#|/", c.symbol)[-1].strip()
            if last:
                names[last] = None
    text = words + ": " + " ".join(list(names)[:_MAX_NAMES])
    doc = doc_line(chunks[0]) if chunks else ""
    return f"{text} - {doc}" if doc else text


def synopses(data: dict[str, Any]) -> dict[FileKey, str]:
    return {k: synopsis_text(k[1], cs) for k, cs in _files(data).items()}


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def embed_texts(texts: list[str], batch: int = 64) -> tuple[np.ndarray, float, str]:
    """The product's default embedder over ``texts``: vectors, seconds, model name."""
    async with open_bench(Settings(store="memory", embedder="onnx")) as bench:
        emb = await bench.embedder()
        if emb is None:
            raise SystemExit("no embedder: install the onnx extra")
        await emb.embed_documents(["warm up"])
        started = time.perf_counter()
        out, cut = [], 0
        for i in range(0, len(texts), batch):
            got = await emb.embed_documents(texts[i : i + batch])
            out.append(np.asarray(got.vectors, np.float32))
            cut += got.truncated
        _CUT["texts"] = _CUT.get("texts", 0) + cut
        return np.concatenate(out), time.perf_counter() - started, emb.model


def synopsis_vectors(
    group: str, data: dict[str, Any], cache: str
) -> tuple[dict[FileKey, np.ndarray], dict[str, Any]]:
    """Each file's synopsis vector (embedded once, cached by text), and how long it took."""
    texts = synopses(data)
    path = Path(cache) / f"synopsis_{group.lstrip('@')}.npz"
    known = _load_npz(str(path)) if path.is_file() else {}
    todo = sorted({t for t in texts.values() if _text_key(t) not in known})
    info: dict[str, Any] = {"files": len(texts), "embedded": len(todo)}
    if todo:
        vecs, seconds, model = asyncio.run(embed_texts(todo))
        known.update({_text_key(t): v for t, v in zip(todo, vecs, strict=True)})
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(known)
        np.savez(
            path,
            model=np.array(model),
            hashes=np.array(keys),
            vectors=np.array([known[k] for k in keys], np.float32),
        )
        info |= {
            "seconds": round(seconds, 2),
            "texts_per_s": round(len(todo) / seconds, 1),
            "truncated": _CUT.pop("texts", 0),
        }
    return {k: _unit(known[_text_key(t)]) for k, t in texts.items()}, info


def scaled(cos: Mapping[FileKey, float], scale: str) -> dict[FileKey, float]:
    """The cosines over the query's candidate files as x in [0, 1] (the best 1)."""
    best, worst = max(cos.values()), min(cos.values())
    if scale == "minmax":
        span = best - worst
        return {k: (v - worst) / span if span > 0 else 1.0 for k, v in cos.items()}
    return {k: max(0.0, 1.0 - (best - v) / GAP) for k, v in cos.items()}


def vector_prior(
    units: Sequence[Mapping[FileKey, np.ndarray]],
    queries: Mapping[str, Sequence[float]],
    s: float,
    scale: str,
) -> Callable[[list[Chunk], Any], dict[FileKey, float]]:
    """The file prior of the mean cosine of the query with each of ``units``' vectors."""

    def make(chunks: list[Chunk], profile: Any) -> dict[FileKey, float]:
        q = queries.get(_QUERY["text"])
        if q is None:
            return {}
        qv = np.asarray(q, np.float32)
        keys = {(c.repository_id, c.file_path) for c in chunks}
        cos = {
            k: float(np.mean([float(u[k] @ qv) for u in units]))
            for k in keys
            if all(k in u for u in units)
        }
        if len(cos) < 2:
            return {}
        return {k: 1.0 - s * (1.0 - x) for k, x in scaled(cos, scale).items()}

    return make


def _make(
    units: dict[str, dict[str, dict[FileKey, np.ndarray]]],
    names: tuple[str, ...],
    s: float,
    scale: str,
    datas: dict[str, dict[str, Any]],
    group: str,
) -> Any:
    return vector_prior([units[n][group] for n in names], datas[group]["vectors"], s, scale)


def _units(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    units: dict[str, dict[str, dict[FileKey, np.ndarray]]] = defaultdict(dict)
    wanted = set(args.units.split(","))
    for g, data in datas.items():
        vecs = chunk_vectors(g, args.vectors)
        if wanted & {"centroid", "both"}:
            units["centroid"][g] = centroids(data, vecs, weighted=False)
        if "centroid_w" in wanted:
            units["centroid_w"][g] = centroids(data, vecs, weighted=True)
        if wanted & {"synopsis", "both"}:
            units["synopsis"][g], _ = synopsis_vectors(g, data, args.cache)
    return units


def score(args: argparse.Namespace, datas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Today's and every unit x scale x strength, in the three modes; cross-validated."""
    units = _units(args, datas)
    configs: list[tuple[dict[str, Any], Any]] = [({"unit": "none"}, centrality._none)]
    for unit in args.units.split(","):
        names = ("centroid", "synopsis") if unit == "both" else (unit,)
        for scale in args.scales.split(","):
            for s in (float(x) for x in args.strengths.split(",")):
                make = functools.partial(_make, units, names, s, scale, datas)
                configs.append(({"unit": unit, "scale": scale, "s": s}, make))
    results = []
    for desc, make in configs:
        started = time.perf_counter()
        results.append(centrality.evaluate_with(datas, make))
        proximity._row(desc, results[-1], started)
    report = proximity._report([d for d, _ in configs], results)
    cats = {
        g: [repo_search.category(q) for q in d["queries"]]
        for g, d in datas.items()
        if not g.startswith("@")
    }
    groups = report["groups"]
    scores = fit_ranker.group_scores(results)
    cfgs = [d for d, _ in configs]
    report["cv_with_categories"] = fit_ranker.cross_validate(
        cfgs,
        scores,
        groups,
        {g: np.ones(len(cfgs), bool) for g in [*groups, "*"]},
        rows=results,
        cats=cats,
    )
    allowed = _unit_masks(args.units.split(","), cfgs, groups)
    report["by_unit"] = {
        unit: fit_ranker.cross_validate(cfgs, scores, groups, mask, rows=results, cats=cats)
        for unit, mask in allowed.items()
    }
    repos = [g for g in groups if not g.startswith("@")]
    report["by_configuration_and_category"] = [
        fit_ranker.by_category({m: {g: r[m][g] for g in repos} for m in MODES}, cats)
        for r in results
    ]
    # Lexical mode only (hybrid and semantic keep today's lists and ranking in every row): the
    # guard is then lexical mode's three blocks, as ``bench.lexical_both``'s.
    lex_scores = {
        m: scores[m] if m == "lexical" else np.repeat(scores[m][:1], len(cfgs), axis=0)
        for m in MODES
    }
    lex_rows = [
        {**r, "hybrid": results[0]["hybrid"], "semantic": results[0]["semantic"]} for r in results
    ]
    every = {g: np.ones(len(cfgs), bool) for g in [*groups, "*"]}
    report["lexical_only"] = {
        "pool": fit_ranker.cross_validate(
            cfgs, lex_scores, groups, every, rows=lex_rows, cats=cats
        ),
        "by_unit": {
            unit: fit_ranker.cross_validate(
                cfgs, lex_scores, groups, mask, rows=lex_rows, cats=cats
            )
            for unit, mask in allowed.items()
        },
    }
    report["hybrid_below_lexical"] = _below(report, groups)
    return report


def _unit_masks(
    units: list[str], cfgs: list[dict[str, Any]], groups: list[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Per unit, the configurations its folds may choose from: today's and that unit's."""
    out = {}
    for unit in units:
        mask = np.array([i == 0 or c.get("unit") == unit for i, c in enumerate(cfgs)])
        out[unit] = dict.fromkeys([*groups, "*"], mask)
    return out


def _below(report: dict[str, Any], groups: list[str]) -> dict[str, Any]:
    """Per configuration, the repositories where hybrid is more than 0.01 below lexical."""
    out = {}
    for c, row in zip(report["configurations"], report["by_configuration_and_group"], strict=True):
        out[json.dumps(c)] = [
            g
            for g in groups
            if not g.startswith("@") and row["hybrid"][g] < row["lexical"][g] - 0.01
        ]
    return out


def main() -> None:
    install()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("cmd", choices=["score"])
    p.add_argument("--dir", default=None)
    p.add_argument("--repos", default=None, help="only these groups (repositories, @cosqa, @own)")
    p.add_argument("--vectors", default="/tmp/file7/vec", help="the recordings' chunk vectors")
    p.add_argument("--cache", default="/tmp/file7", help="synopsis vectors")
    p.add_argument("--units", default="centroid,centroid_w,synopsis,both")
    p.add_argument("--scales", default="minmax,gap")
    p.add_argument("--strengths", default="0.05,0.1,0.2,0.3")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if not args.dir:
        p.error("--dir: the recordings of bench.replay record (all three benches)")
    datas = replay_store.load_recordings(args.dir, args.repos)
    emit(score(args, datas), args.out)


if __name__ == "__main__":
    main()
