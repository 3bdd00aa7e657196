"""Learning to rank over the ranking stack's top N (issue 36, round six): the features.

``dump`` replays every recorded question of the three evals (``bench.replay`` recordings)
through the real ``SearchService`` in each mode and keeps, per question, the ranking stack's
ordered candidates (the list ``collapse`` takes) with, for the first ``--top`` of them, one
feature row each and the eval's relevance label. Every feature is computed from what the
service holds at search time, with no I/O: the two retrieved lists (as the store returned
them), the fused candidates, the query's profile and the ranking configuration. The gains
are recomputed with the ranking stack's own helpers (``core.ranking``), as ``rerank`` does.

It checks, question by question, that collapsing the dumped list again gives the hits the
service returned, so a model that leaves the order alone reproduces the baseline exactly.
``bench.ltr_fit`` fits and cross-validates the models over the dump.

    python -m bench.ltr dump --dir DIR --out FILE [--top 30] [--modes hybrid,lexical,semantic]
        [--repos a,b] [--no-cosqa] [--no-own]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import math
import pickle
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import replay_store, repo_search
from bench.retrieval import SLACK_LINES
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import Chunk, ScoredChunk, SearchQuery
from codebase_mcp_search.core.ranking import QueryProfile, RankingConfig
from codebase_mcp_search.core.ranking.definitions import definition_gains
from codebase_mcp_search.core.ranking.hollow import HOLLOW_KINDS, is_hollow, named_by
from codebase_mcp_search.core.ranking.path_words import (
    files_path_matches,
    path_shares,
    path_word_weights,
    stem_gains,
)
from codebase_mcp_search.core.services import SearchService
from codebase_mcp_search.core.services.hits import collapse
from codebase_mcp_search.core.services.search import service as service_mod

FEATURES = (
    "final",  # the stack's final score over the top hit's
    "rank_rr",  # 1 / the stack's rank
    "fused",  # the retrieval (fused) score over the best candidate's
    "lex",  # the lexical list's score over its best (0: not in it)
    "lex_rr",  # 1 / rank in the lexical list (0: not in it)
    "cos",  # raw cosine (0: not in the semantic list)
    "cos_gap",  # cosine minus the list's best (-1: not in it)
    "sem_rr",  # 1 / rank in the semantic list (0: not in it)
    "both",  # both lists hold the chunk
    "both_file",  # both lists hold a chunk of its file
    "cov_text",  # share of the query's distinct terms in the chunk's text
    "cov_path",  # ... in its path
    "cov_symbol",  # ... in its symbol
    "cov_file",  # ... in its file's candidate chunks' text and path
    "file_chunks",  # log(1 + candidate chunks of its file)
    "kind_code",  # function, method
    "kind_type",  # class, struct, interface, enum, trait, type, header
    "kind_module",  # module, block
    "kind_text",  # text (prose, config)
    "length",  # log(1 + lines)
    "hollow",  # the stack counted it hollow
    "definition",  # its definition gain
    "path",  # its file's path-word gain
    "stem",  # its file's file-name gain
    "prior",  # the prior of its kind of file (1.0: source)
)
# The module (the package exports its function under the same name).
rerank_mod = importlib.import_module("codebase_mcp_search.core.ranking.rerank")
_CODE = frozenset({"function", "method"})
_TYPE = frozenset({"class", "struct", "interface", "enum", "trait", "type", "header"})
_MODULE = frozenset({"module", "block"})


def _terms(text: str) -> frozenset[str]:
    return frozenset(lexical.analysed(text))


def features(
    top: Sequence[ScoredChunk],
    fused: Sequence[ScoredChunk],
    definitions: Sequence[Chunk],
    lex: Sequence[ScoredChunk] | None,
    vec: Sequence[ScoredChunk] | None,
    profile: QueryProfile,
    config: RankingConfig,
) -> np.ndarray:
    """One row of ``FEATURES`` per chunk of ``top`` (the stack's first N, in order)."""
    n = len(top)
    x = np.zeros((n, len(FEATURES)))
    if not n:
        return x
    col = {f: i for i, f in enumerate(FEATURES)}
    best_fused = max((s.score for s in fused), default=0.0)
    fused_of = {s.chunk.id: s.score for s in fused}
    chunks: dict[str, Chunk] = {s.chunk.id: s.chunk for s in fused}
    for c in definitions:
        chunks.setdefault(c.id, c)
    lex_rank = {s.chunk.id: i for i, s in enumerate(lex or ())}
    lex_score = {s.chunk.id: s.score for s in lex or ()}
    lex_best = max(lex_score.values(), default=0.0)
    vec_rank = {s.chunk.id: i for i, s in enumerate(vec or ())}
    vec_score = {s.chunk.id: s.score for s in vec or ()}
    vec_best = max(vec_score.values(), default=0.0)
    lex_files = {s.chunk.file_path for s in lex or ()}
    vec_files = {s.chunk.file_path for s in vec or ()}
    q = frozenset(profile.terms)
    by_file: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks.values():
        by_file[c.file_path].append(c)
    files = set(by_file)
    path_gain: dict[str, float] = {}
    stem_gain: dict[str, float] = {}
    if not profile.is_symbol:
        matches = files_path_matches(profile, files)
        weights = path_word_weights(profile, files, config.path_word_floor, matches)
        path_gain = {
            f: config.path_boost * s for f, s in path_shares(profile, weights, matches).items()
        }
        stem_gain = stem_gains(profile, config, files)
    defs = definition_gains(chunks, profile, config) if profile.names else {}
    factors = rerank_mod.role_factors(profile, config)
    said = frozenset(rerank_mod.paths.normalise_name(t) for t in (*profile.tokens, *profile.names))
    file_cov: dict[str, float] = {}
    top_final = top[0].score or 1.0

    def cov(terms: frozenset[str]) -> float:
        return len(q & terms) / len(q) if q else 0.0

    for i, s in enumerate(top):
        c = s.chunk
        r = x[i]
        r[col["final"]] = s.score / top_final
        r[col["rank_rr"]] = 1.0 / (i + 1)
        r[col["fused"]] = fused_of.get(c.id, 0.0) / best_fused if best_fused > 0 else 0.0
        if c.id in lex_rank:
            r[col["lex"]] = lex_score[c.id] / lex_best if lex_best > 0 else 0.0
            r[col["lex_rr"]] = 1.0 / (lex_rank[c.id] + 1)
        if c.id in vec_rank:
            r[col["cos"]] = vec_score[c.id]
            r[col["cos_gap"]] = vec_score[c.id] - vec_best
            r[col["sem_rr"]] = 1.0 / (vec_rank[c.id] + 1)
        else:
            r[col["cos_gap"]] = -1.0
        r[col["both"]] = float(c.id in lex_rank and c.id in vec_rank)
        r[col["both_file"]] = float(c.file_path in lex_files and c.file_path in vec_files)
        r[col["cov_text"]] = cov(_terms(c.content))
        r[col["cov_path"]] = cov(_terms(c.file_path))
        r[col["cov_symbol"]] = cov(_terms(c.symbol or ""))
        if c.file_path not in file_cov:
            seen: set[str] = set(_terms(c.file_path))
            for o in by_file[c.file_path]:
                seen |= _terms(o.content)
            file_cov[c.file_path] = cov(frozenset(seen))
        r[col["cov_file"]] = file_cov[c.file_path]
        r[col["file_chunks"]] = math.log1p(len(by_file[c.file_path]))
        kind = c.kind or ""
        r[col["kind_code"]] = float(kind in _CODE)
        r[col["kind_type"]] = float(kind in _TYPE)
        r[col["kind_module"]] = float(kind in _MODULE)
        r[col["kind_text"]] = float(kind == "text")
        r[col["length"]] = math.log1p(c.end_line - c.start_line + 1)
        r[col["hollow"]] = float(
            config.hollow_prior < 1.0
            and kind in HOLLOW_KINDS
            and is_hollow(c)
            and not rerank_mod.is_trivial(c.content)
            and not named_by(c, said)
        )
        r[col["definition"]] = defs.get(c.id, 0.0)
        r[col["path"]] = path_gain.get(c.file_path, 0.0)
        r[col["stem"]] = stem_gain.get(c.file_path, 0.0)
        r[col["prior"]] = rerank_mod._prior(c, factors, config.trivial_prior)
    return x


class Stage:
    """Wraps the service's ``rerank``: calls it, then hands its result to ``after`` (which
    may dump it or re-order its head) with the context of the search."""

    def __init__(self) -> None:
        self.store: replay_store.Capturing | None = None
        self.after: Callable[[list[ScoredChunk], dict[str, Any]], list[ScoredChunk]] | None = None
        self.real = rerank_mod.rerank

    def __call__(
        self,
        candidates: Sequence[ScoredChunk],
        profile: QueryProfile,
        config: RankingConfig,
        definitions: Sequence[Chunk] = (),
    ) -> list[ScoredChunk]:
        out = self.real(candidates, profile, config, definitions)
        assert self.store is not None
        ctx = {
            "fused": list(candidates),
            "definitions": list(definitions),
            "lex": self.store.last.get("lexical"),
            "vec": self.store.last.get("semantic"),
            "profile": profile,
            "config": config,
        }
        return self.after(out, ctx) if self.after else out


STAGE = Stage()


def service(data: dict[str, Any]) -> SearchService:
    """The replay's service over ``data`` (default ranking and fusion), through ``STAGE``."""
    service_mod.rerank = STAGE  # type: ignore[attr-defined]
    store = replay_store.Capturing(data)
    STAGE.store = store
    emb = replay_store._Vectors(data["model"], data["dimension"], data["vectors"])
    return SearchService(
        store,
        emb,
        fusion=FusionConfig(),
        ranking=RankingConfig(),
        stem_weight=replay_store.stem_weight(data),
    )


def _gold(kind: str, spec: Any) -> Any:
    """A function of a chunk giving its relevance label for this question."""
    if kind == "repo":
        targets = list(spec.get("relevant", [])) + list(spec.get("secondary", []))
        return lambda c: float(
            sum(repo_search._covers(c.file_path, c.start_line, c.end_line, t) for t in targets)
        )
    path, start, end = spec

    def label(c: Chunk) -> float:
        overlaps = c.file_path == path and c.start_line <= end and c.end_line >= start
        return float(overlaps and (c.end_line - c.start_line) <= (end - start) + SLACK_LINES)

    return label


async def dump_group(
    data: dict[str, Any], kind: str, group: str, modes: list[str], top: int
) -> list[dict[str, Any]]:
    """Every question of one recording, in each of ``modes``."""
    svc = service(data)
    rows: list[dict[str, Any]] = []
    for mode in modes:
        for qi, q in enumerate(data["queries"]):
            if kind == "repo":
                text, filters, spec = q["query"], None, q
            elif kind == "cosqa":
                text, filters, spec = q[0], None, q[1:]
            else:
                text, filters = q["query"], data["repo_ids"][q["corpus"]]
                spec = (q["path"], q["start_line"], q["end_line"])
            seen: dict[str, Any] = {}

            def after(out: list[ScoredChunk], ctx: dict[str, Any], seen: Any = seen) -> Any:
                seen["out"] = out
                prof = ctx["profile"]
                seen["qkind"] = "symbol" if prof.is_symbol else "named" if prof.names else "words"
                seen["x"] = features(
                    out[:top],
                    ctx["fused"],
                    ctx["definitions"],
                    ctx["lex"],
                    ctx["vec"],
                    ctx["profile"],
                    ctx["config"],
                )
                return out

            assert STAGE.store is not None
            STAGE.store.forget()
            STAGE.after = after
            result = await svc.search(
                SearchQuery.build(text, mode=mode, limit=10, repository_id=filters)
            )
            STAGE.after = None
            out = seen["out"]
            label = _gold(kind, spec)
            again = [sc.chunk for sc, _ in collapse(out, 10)]
            real = [(h.file_path, h.start_line, h.end_line) for h in result.hits]
            if [(c.file_path, c.start_line, c.end_line) for c in again] != real:
                raise SystemExit(f"{group} {mode} {text!r}: collapsing again differs")
            # The head the models may re-order, and enough after it for collapse's ten.
            rows.append(
                {
                    "group": group,
                    "kind": kind,
                    "mode": mode,
                    "qi": qi,
                    "query": text,
                    "spec": spec if kind != "repo" else None,
                    "out": out[: max(top, 10) + 90],
                    "x": seen["x"],
                    "y": np.array([label(s.chunk) for s in out[:top]]),
                    "qkind": seen["qkind"],
                }
            )
        print(f"dumped {group} {mode}", flush=True)
    return rows


async def dump(args: argparse.Namespace) -> None:
    modes = args.modes.split(",")
    groups: dict[str, Any] = {"rows": [], "repo_meta": {}, "top": args.top}
    datas = await asyncio.to_thread(replay_store.load_recordings, args.dir)
    wanted = set(args.repos.split(",")) if args.repos else None
    for name, data in datas.items():
        if name.startswith("@") or (wanted is not None and name not in wanted):
            continue
        for q in data["queries"]:
            targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
            q["_targets"] = targets
            q["_nrel"] = repo_search.covered_targets(data["chunks"], targets)
        groups["repo_meta"][name] = {
            "language": data["language"],
            "queries": [
                {
                    "query": q["query"],
                    "targets": q["_targets"],
                    "nrel": q["_nrel"],
                    "category": repo_search.category(q),
                }
                for q in data["queries"]
            ],
        }
        groups["rows"] += await dump_group(data, "repo", name, modes, args.top)
    for kind, skip in (("cosqa", args.no_cosqa), ("own", args.no_own)):
        recorded = datas.get(f"@{kind}")
        if not skip and recorded is not None:
            groups["rows"] += await dump_group(recorded, kind, kind, modes, args.top)
    await asyncio.to_thread(Path(args.out).write_bytes, pickle.dumps(groups))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("dump")
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--top", type=int, default=30)
    s.add_argument("--modes", default="hybrid,lexical,semantic")
    s.add_argument("--repos", default=None)
    s.add_argument("--no-cosqa", action="store_true")
    s.add_argument("--no-own", action="store_true")
    args = p.parse_args()
    asyncio.run(dump(args))


if __name__ == "__main__":
    main()
