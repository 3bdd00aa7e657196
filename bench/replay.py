"""Record each benchmark query's retrievals once, then score many search configurations fast.

``record`` indexes a benchmark with the product's pipeline (memory store) and keeps, per query,
the query vector, the semantic and lexical candidate lists at the deepest depth any
configuration asks for, and the definitions lookup. ``score`` answers every search of a
configuration from those lists through the real ``SearchService`` (same fusion, ranking and
collapsing), so a configuration costs only its own ranking; the figures equal those of
``bench.repo_search``, ``bench.cosqa_eval`` and ``bench.own_eval`` for the same configuration.
Not for lexical-analyser or chunking changes: the lists hold the recorded index's terms. Query
vectors are embedded once; corpus vectors are cached under ``bench/.cache``. ``--context``
embeds each chunk with a header (its path, or path and symbol; ``plain``: the content alone
through the same code) as ``bench.repo_search --context`` does (bench/context_text.py), its
vectors cached in files of their own; the query side is unchanged, so ``score`` needs no flag.
The stores that record and answer are ``bench.replay_store``'s.

    python -m bench.replay record --bench repo|cosqa|own [--embedder onnx] [--out DIR]
        [--context plain|path|path_symbol]
    python -m bench.replay score [--dir DIR] [--variants JSON] [--modes hybrid,lexical,semantic]
        [--repos a,b] [--no-cosqa] [--no-own] [--cosqa-only] [--by-repo] [--dump FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import tempfile
from pathlib import Path
from typing import Any

from bench import context_text, replay_store, repo_search
from bench.harness import open_bench
from bench.replay_store import RecordingStore, _Replay, _Vectors
from bench.retrieval import metrics, rank_of, ranking_variants
from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import SearchQuery
from codebase_mcp_search.core.ranking import RankingConfig
from codebase_mcp_search.core.services import SearchService
from codebase_mcp_search.entrypoints.settings import Settings


def _cache(args: argparse.Namespace, stem: str, name: str) -> Path:
    """A vector cache file, named as ``bench.repo_search`` names its own."""
    return repo_search.vector_cache(stem, args.embedder, name, context=args.context)


async def _record_one(
    settings: Settings,
    root: Path,
    queries: list[tuple[str, str | None]],
    cache: Path,
    context: str | None = None,
) -> dict[str, Any]:
    """Index ``root`` and record every query (text, repository to filter by or None)."""
    context_text.reset()
    async with open_bench(settings) as bench:
        cb = bench.codebase
        await repo_search._seed_vectors(bench, cache)
        await cb.index(root)
        (repo,) = await cb.repositories()
        if repo.embedding_model:
            await repo_search._save_vectors(bench, cache, repo.id, repo.embedding_model, context)
        rec = RecordingStore(bench.store)
        service = await bench.search_service(store=rec)
        vectors: dict[str, list[float]] = {}
        emb = await bench.embedder()
        embedded = await bench.search_service(store=rec, ranking=RankingConfig(embedded_factor=1.0))
        for text, _ in queries:
            for mode in ("hybrid", "lexical", "semantic"):
                await service.search(SearchQuery.build(text, mode=mode, limit=10))
            await embedded.search(SearchQuery.build(text, mode="lexical", limit=10))
            if emb is not None:
                vectors[text] = await emb.embed_query(text)
        return {
            "vector": rec.vector,
            "lexical": rec.lexical,
            "stemmed": rec.stemmed,
            "defs": rec.defs,
            "repos": await cb.repositories(),
            "model": emb.model if emb else None,
            "dimension": emb.dimension if emb else 0,
            "vectors": vectors,
            "chunks": await cb.chunks(repo.id),
            "context": context,
            "context_embedding": context_text.summary() if context else None,
        }


async def record(args: argparse.Namespace) -> None:
    out = Path(args.out)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    settings = Settings(store="memory", embedder=args.embedder)
    if args.bench == "repo":
        bench = repo_search.DEFAULT_BENCH
        specs = json.loads((bench / "repos.json").read_text())
        for spec in specs:
            if args.repos and spec["name"] not in args.repos.split(","):
                continue
            root = bench / "repos" / spec["name"]
            if spec.get("benchmark_root"):
                root = root / spec["benchmark_root"]
            qs = json.loads((bench / "annotations" / f"{spec['name']}.json").read_text())
            cache = _cache(args, "repo_search", spec["name"])
            data = await _record_one(
                settings, root, [(q["query"], None) for q in qs], cache, args.context
            )
            data["queries"] = qs
            data["language"] = spec["language"]
            (out / f"repo_{spec['name']}.pkl").write_bytes(pickle.dumps(data))
            print("recorded", spec["name"], flush=True)
    elif args.bench == "cosqa":
        from bench.cosqa_eval import DEFAULT_DATA, write_corpus

        with tempfile.TemporaryDirectory(prefix="cosqa-") as tmp:
            root = Path(tmp) / "cosqa"
            queries, _ = write_corpus(DEFAULT_DATA, root)
            cache = _cache(args, "replay", "cosqa")
            data = await _record_one(
                settings, root, [(t, None) for t, _ in queries], cache, args.context
            )
            data["queries"] = [(t, g.path, g.start, g.end) for t, g in queries]
            (out / "cosqa.pkl").write_bytes(pickle.dumps(data))
    else:
        await record_own(settings, out, args)


async def record_own(settings: Settings, out: Path, args: argparse.Namespace) -> None:
    import importlib
    import shutil

    from bench.own_eval import QUERIES

    spec = json.loads(QUERIES.read_text())
    context_text.reset()
    with tempfile.TemporaryDirectory(prefix="own-eval-") as tmp:
        async with open_bench(settings) as bench:
            cb = bench.codebase
            repo_ids: dict[str, str] = {}
            for name, c in spec["corpora"].items():
                pkg_dir = Path(importlib.import_module(c["package"]).__file__ or "").parent
                root = Path(tmp) / name
                shutil.copytree(pkg_dir, root, ignore=shutil.ignore_patterns("__pycache__"))
                cache = _cache(args, "replay", f"own_{name}")
                await repo_search._seed_vectors(bench, cache)
                repo_ids[name] = (await cb.index(root)).repository_id
                repo = await cb.repository(repo_ids[name])
                if repo.embedding_model:
                    await repo_search._save_vectors(
                        bench, cache, repo.id, repo.embedding_model, args.context
                    )
            rec = RecordingStore(bench.store)
            service = await bench.search_service(store=rec)
            embedded = await bench.search_service(
                store=rec, ranking=RankingConfig(embedded_factor=1.0)
            )
            emb = await bench.embedder()
            vectors: dict[str, list[float]] = {}
            for q in spec["queries"]:
                for mode in ("hybrid", "lexical", "semantic"):
                    await service.search(
                        SearchQuery.build(
                            q["query"], mode=mode, limit=10, repository_id=repo_ids[q["corpus"]]
                        )
                    )
                await embedded.search(
                    SearchQuery.build(
                        q["query"], mode="lexical", limit=10, repository_id=repo_ids[q["corpus"]]
                    )
                )
                if emb is not None:
                    vectors[q["query"]] = await emb.embed_query(q["query"])
            data = {
                "vector": rec.vector,
                "lexical": rec.lexical,
                "stemmed": rec.stemmed,
                "defs": rec.defs,
                "repos": await cb.repositories(),
                "model": emb.model if emb else None,
                "dimension": emb.dimension if emb else 0,
                "vectors": vectors,
                "queries": spec["queries"],
                "repo_ids": repo_ids,
                # Every chunk, as the other benches keep them (bench/lexical_fields.py
                # rebuilds the lexical lists from them).
                "chunks": [c for rid in repo_ids.values() for c in await cb.chunks(rid)],
                "context": args.context,
                "context_embedding": context_text.summary() if args.context else None,
            }
    (out / "own.pkl").write_bytes(pickle.dumps(data))


def _service(data: dict[str, Any], variant: Any) -> SearchService:
    """A search service over the recorded lists, with ``variant``'s ranking and fusion (the
    product's defaults updated by it)."""
    emb = _Vectors(data["model"], data["dimension"], data["vectors"]) if data["model"] else None
    fusion = FusionConfig().model_copy(update=variant.fusion or {})
    return SearchService(
        _Replay(data),
        emb,
        fusion=fusion,
        ranking=variant.ranking,
        stem_weight=replay_store.stem_weight(data),
    )


async def score_repo(data: dict[str, Any], variant: Any, mode: str) -> list[dict[str, Any]]:
    svc = _service(data, variant)
    rows = []
    for q in data["queries"]:
        targets = list(q.get("relevant", [])) + list(q.get("secondary", []))
        key = "_nrel_" + q["query"]
        if key not in data:
            data[key] = repo_search.covered_targets(data["chunks"], targets)
        result = await svc.search(SearchQuery.build(q["query"], mode=mode, limit=10))
        rows.append(
            {
                "category": repo_search.category(q),
                "ndcg": repo_search.ndcg_at_10(result.hits, targets, data[key]),
                "query": q["query"],
            }
        )
    return rows


async def score_cosqa(data: dict[str, Any], variant: Any, mode: str) -> list[int | None]:
    """The rank of each CoSQA query's gold function (None: not in the top 10)."""
    svc = _service(data, variant)
    ranks: list[int | None] = []
    for text, path, start, end in data["queries"]:
        r = await svc.search(SearchQuery.build(text, mode=mode, limit=10))
        ranks.append(rank_of(r.hits, path, start, end))
    return ranks


async def score_own(data: dict[str, Any], variant: Any, mode: str) -> list[int | None]:
    """The rank of each own-eval question's gold function (None: not in the top 10)."""
    svc = _service(data, variant)
    ranks: list[int | None] = []
    for q in data["queries"]:
        r = await svc.search(
            SearchQuery.build(
                q["query"], mode=mode, limit=10, repository_id=data["repo_ids"][q["corpus"]]
            )
        )
        ranks.append(rank_of(r.hits, q["path"], q["start_line"], q["end_line"]))
    return ranks


async def score(args: argparse.Namespace) -> dict[str, Any]:
    d = Path(args.dir)
    variants = ranking_variants(args.variants)
    out: dict[str, Any] = {}
    repo_files = sorted(await asyncio.to_thread(lambda: list(d.glob("repo_*.pkl"))))
    if args.repos:
        repo_files = [f for f in repo_files if f.stem[5:] in args.repos.split(",")]
    datas = {f.stem[5:]: pickle.loads(f.read_bytes()) for f in repo_files}
    if args.cosqa_only:
        datas = {}
    cosqa_data: list[dict[str, Any]] = []
    own_data: list[dict[str, Any]] = []
    for mode in args.modes.split(","):
        for name, v in variants.items():
            per_repo: dict[str, Any] = {}
            if datas:
                for repo, data in datas.items():
                    per_repo[repo] = await score_repo(data, v, mode)
                langs = {r: data["language"] for r, data in datas.items()}
                s = repo_search.summarise(
                    {r: {"x": [{**x, "ms": 0.0} for x in rows]} for r, rows in per_repo.items()},
                    langs,
                    "x",
                )
                entry: dict[str, Any] = {"ndcg@10": s["ndcg@10"], "cat": s["by_category"]}
                if args.by_repo:
                    entry["repo"] = s["by_repository"]
                if args.dump:
                    entry["rows"] = per_repo
            else:
                entry = {}
            cosqa = d / "cosqa.pkl"
            if cosqa.exists() and not args.no_cosqa:
                if not cosqa_data:
                    cosqa_data.append(pickle.loads(cosqa.read_bytes()))
                ranks = await score_cosqa(cosqa_data[0], v, mode)
                entry["cosqa_mrr"] = metrics(ranks)["mrr@10"]
                if args.dump:
                    entry["cosqa_ranks"] = ranks
            own = d / "own.pkl"
            if own.exists() and not args.no_own:
                if not own_data:
                    own_data.append(pickle.loads(own.read_bytes()))
                ranks = await score_own(own_data[0], v, mode)
                entry["own_mrr"] = metrics(ranks)["mrr@10"]
                if args.dump:
                    entry["own_ranks"] = ranks
            out[f"{mode}/{name}"] = entry
            print(
                f"{mode}/{name}: {json.dumps({k: entry[k] for k in entry if k not in ('rows', 'cosqa_ranks')})}",
                flush=True,
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--bench", choices=["repo", "cosqa", "own"], required=True)
    r.add_argument("--embedder", default="onnx")
    r.add_argument("--repos", default=None)
    r.add_argument("--out", default="/tmp/exp19/rec")
    r.add_argument(
        "--context",
        default=None,
        choices=sorted(context_text.VARIANTS),
        help="embed each chunk with this header (bench/context_text.py; plain: none, "
        "embedded afresh through the same code)",
    )
    s = sub.add_parser("score")
    s.add_argument("--dir", default="/tmp/exp19/rec")
    s.add_argument("--variants", default=None)
    s.add_argument("--modes", default="hybrid")
    s.add_argument("--repos", default=None)
    s.add_argument("--no-cosqa", action="store_true")
    s.add_argument("--no-own", action="store_true")
    s.add_argument("--cosqa-only", action="store_true")
    s.add_argument("--by-repo", action="store_true")
    s.add_argument("--dump", default=None)
    s.add_argument("--out", default=None)
    args = p.parse_args()
    if args.cmd == "record":
        context_text.install(args.context)
        asyncio.run(record(args))
    else:
        res = asyncio.run(score(args))
        if args.dump:
            Path(args.dump).write_bytes(pickle.dumps(res))
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
