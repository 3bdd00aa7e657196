"""What a chunk's vector costs the default embedder, and how to cut it (issue 33).

The chunks are cut by the product's own pipeline (memory store, no embedder) from the
repository benchmark's 16 development repositories (``../shared/bench/repo-search``), the
10,000-file workload (``../shared/bench/baseline-10k``) and the CoSQA corpus, and counted in the
model's own tokens (its tokenizer, [CLS] and [SEP] included, nothing cut).

    python -m bench.vector_cost texts [--out-dir bench/.cache/vector_cost]
        # the fixed text sets of the speed runs: 1,500 chunks of each of two dev-half
        # repositories (``dev2``: gin, Go; commons-lang, Java) and 3,000 of the 10k workload
        # (``w10k``), every k-th distinct chunk text in path and line order
    python -m bench.vector_cost stats [--out FILE]
        # per corpus: the token counts' mean and percentiles, what each budget embeds, and the
        # trivial chunks (import blocks, tiny chunks, chunks with nothing to read)
    python -m bench.vector_cost speed --set dev2 --variants 256,128,96 [--runs 3] [--out FILE]
        # the raw model's chunks/s (``OnnxEmbedder.embed_documents`` on the set), each run a
        # fresh process, variants alternating (A B C A B C ...); medians, and each variant's
        # ratio to the first one in every round (the paired figure on a shared machine)
    python -m bench.vector_cost interleave --set dev2 --variants 256,128 [--slice 100]
        # the same in one process, the variants taking turns on slices of 100 texts: each
        # sees the same drift of the machine (a cross-check of ``speed``)
    python -m bench.vector_cost agree --set w10k --variants 256:fuse=0,256 [--out FILE]
        # each variant's vectors of the set against the first's (cosines, identical rows)
    python -m bench.vector_cost cost [--out FILE]
        # seconds per text against its token count (one text per run, as the int8 graph runs)

A speed variant is a budget and options: ``128`` (budget 128, one run at a time on every
thread, the embedder before ``parallel_runs``), ``128:threads=1``, ``128:spin=0`` (onnxruntime's worker threads sleep instead of
spinning), ``128:parallel=2`` (two texts at once on two threads sharing the session, one
intra-op thread each: ``OnnxEmbedder(parallel_runs=2)``, the product's default on two cores), ``128:batch=8`` (texts of like length eight to a run: padding, and an
int8 graph's vectors then depend on their batch; wrong for a graph whose attention reads no
mask), ``256:fuse=0`` (the int8 graph derived without fusing its attention, as before issue
33's speed work, in a cache of its own), ``256:approx=0`` (fused attention, the same vectors
as unfused: recipe mha-v2, before ``adapters/onnx/approximate.py``), ``256:skipnorm=0|1``
(onnxruntime's SkipLayerNormFusion off or on, whatever the recipe). Each run reports CPU
seconds per 1,000 chunks beside chunks/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.retrieval import emit

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench"
REPO_BENCH = SHARED / "repo-search"
WORKLOAD = SHARED / "baseline-10k" / "baseline_repo.tar.gz"
COSQA = SHARED / "cosqa"
SETS = HERE / ".cache" / "vector_cost"
BUDGETS = (256, 192, 128, 96, 64)
DEV2 = ("gin", "commons-lang")
PER_REPO = 1500
WORKLOAD_TEXTS = 3000


# --- Chunks ---------------------------------------------------------------------------------


async def _chunks(root: Path) -> list[Any]:
    """The chunks the product cuts from ``root`` (memory store, no embedder), in path and
    line order."""
    from bench.harness import open_bench
    from codebase_mcp_search.entrypoints.settings import Settings

    async with open_bench(Settings(store="memory", embedder="none")) as bench:
        indexed = await bench.codebase.index(root)
        chunks = await bench.codebase.chunks(indexed.repository_id)
    return sorted(chunks, key=lambda c: (c.file_path, c.start_line, c.end_line))


def _repo_root(name: str) -> Path:
    specs = {s["name"]: s for s in json.loads((REPO_BENCH / "repos.json").read_text())}
    root = REPO_BENCH / "repos" / name
    return root / specs[name]["benchmark_root"] if specs[name].get("benchmark_root") else root


def _distinct(chunks: list[Any]) -> list[Any]:
    """One chunk per text: the indexer embeds a text once (its vector cache is by hash)."""
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.content_hash not in seen:
            seen.add(c.content_hash)
            out.append(c)
    return out


def _every(items: list[Any], n: int) -> list[Any]:
    """``n`` items spread evenly over ``items`` (all of them when fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def _corpora(names: list[str]) -> dict[str, list[Any]]:
    """Each named corpus's distinct chunks: a dev-half repository, ``w10k`` or ``cosqa``."""
    out: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory(prefix="vector-cost-") as tmp:
        for name in names:
            if name == "w10k":
                with tarfile.open(WORKLOAD) as tar:
                    tar.extractall(tmp, filter="data")
                root = Path(tmp) / "baseline_repo"
            elif name == "cosqa":
                from bench.cosqa_eval import write_corpus

                root = Path(tmp) / "cosqa"
                write_corpus(COSQA, root)
            else:
                root = _repo_root(name)
            out[name] = _distinct(asyncio.run(_chunks(root)))
            print(f"{name}: {len(out[name])} distinct chunks", file=sys.stderr, flush=True)
    return out


def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    from codebase_mcp_search.adapters.onnx.model_files import BUILTIN_FILES

    tok = Tokenizer.from_file(str(BUILTIN_FILES / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def write_sets(out_dir: Path) -> dict[str, Any]:
    corpora = _corpora([*DEV2, "w10k"])
    sets = {
        "dev2": [c.content for name in DEV2 for c in _every(corpora[name], PER_REPO)],
        "w10k": [c.content for c in _every(corpora["w10k"], WORKLOAD_TEXTS)],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer()
    summary: dict[str, Any] = {}
    for name, texts in sets.items():
        (out_dir / f"{name}.json").write_text(json.dumps(texts))
        summary[name] = {"texts": len(texts), **_token_summary(_lengths(tok, texts))}
    return summary


# --- Token counts and trivial chunks --------------------------------------------------------


def _lengths(tok: Any, texts: list[str]) -> list[int]:
    return [len(e.ids) for e in tok.encode_batch(texts)]


def _token_summary(lengths: list[int]) -> dict[str, Any]:
    ordered = sorted(lengths)

    def pct(p: float) -> int:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return {
        "mean_tokens": round(statistics.fmean(lengths), 1),
        "percentiles": {f"p{int(p * 100)}": pct(p) for p in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)},
        "embedded_per_chunk": {
            str(b): round(statistics.fmean(min(n, b) for n in lengths), 1) for b in BUDGETS
        },
        "over_budget_share": {
            str(b): round(sum(n > b for n in lengths) / len(lengths), 3) for b in BUDGETS
        },
    }


# A line that only brings names in (or closes such a list), in the benchmark's languages.
_IMPORT_LINE = re.compile(
    r"""^(
        (from\s+\S+\s+)?import\b.*            # Python, Java, Kotlin, Scala, Swift, Go, TS/JS
      | @testable\s+import\b.*
      | export\s+(\*|\{[^}]*\}|type\s+\{[^}]*\})\s*(as\s+\w+\s+)?from\b.*   # re-exports
      | (const|let|var|local)\s+[\w{}\s,]+=\s*require\b.*
      | require(_relative)?\b.*              # Ruby, Lua
      | \#\s*include\b.*                     # C, C++
      | (pub(\([^)]*\))?\s+)?use\s+.*        # Rust
      | (pub\s+)?mod\s+\w+\s*;               # Rust modules declared
      | extern\s+crate\b.*
      | (alias|import|require|use)\s+[A-Z].* # Elixir
      | using\s+[\w.]+\s*;                   # C#
      | package\s+[\w.]+\s*;?                # Java, Go, Kotlin
      | (source|\.)\s+\S+                    # Bash
      | (\w+\s+)?"[^"]+"                     # a Go import block's lines
      | [\w{}\s,]*\}?\s*from\s+['"].*['"];?  # the tail of a multi-line TS import
      | (\w+(\s+as\s+\w+)?\s*,\s*)*\w+(\s+as\s+\w+)?\s*,?   # names of a multi-line list
      | [()\[\]{};,]*                        # brackets
    )$""",
    re.VERBOSE,
)
# Such a line proper (a list of names alone is no import block).
_IMPORT_START = re.compile(
    r"^(from|import|@testable|#\s*include|(pub\s+)?use|using|require(_relative)?|package"
    r"|export|extern|(pub\s+)?mod|alias|source)\b|.*\brequire\b"
)
_COMMENT = re.compile(r"^(//|#(?!\s*include)|--|/\*|\*|\*/|;;)")


def kind_of(content: str, tokens: int) -> str | None:
    """Which trivial kind a chunk is, or None: ``nothing`` (the ranking's own rule: fewer
    than 16 word characters), ``imports`` (every code line brings names in) or ``tiny`` (at
    most 3 code lines and 32 tokens: a one-line accessor, a constant)."""
    from codebase_mcp_search.core.ranking.rerank import is_trivial

    if is_trivial(content):
        return "nothing"
    code = [ln.strip() for ln in content.splitlines()]
    code = [ln for ln in code if ln and not _COMMENT.match(ln)]
    if (
        code
        and any(_IMPORT_START.match(ln) for ln in code)
        and all(_IMPORT_LINE.match(ln) for ln in code)
    ):
        return "imports"
    if len(code) <= 3 and tokens <= 32:
        return "tiny"
    return None


def _cost_model(path: Path | None) -> Any:
    """Seconds a text of n tokens takes, interpolated between ``cost``'s measured points
    (None without them)."""
    if path is None or not path.is_file():
        return None
    import numpy as np

    points = json.loads(path.read_text())["points"]
    xs = np.array([p["tokens"] for p in points], dtype=float)
    ys = np.array([p["seconds"] for p in points], dtype=float)
    return lambda n: float(np.interp(n, xs, ys))


def stats(args: argparse.Namespace) -> dict[str, Any]:
    specs = json.loads((REPO_BENCH / "repos.json").read_text())
    names = [s["name"] for s in specs] + ["w10k", "cosqa"]
    corpora = _corpora(names)
    tok = _tokenizer()
    model = _cost_model(args.cost)
    out: dict[str, Any] = {"budgets": list(BUDGETS), "cost": str(args.cost), "corpora": {}}
    dev_lengths: list[int] = []
    for name, chunks in corpora.items():
        lengths = _lengths(tok, [c.content for c in chunks])
        if name not in ("w10k", "cosqa"):
            dev_lengths += lengths
        kinds = [kind_of(c.content, n) for c, n in zip(chunks, lengths, strict=True)]
        trivial: dict[str, Any] = {}
        for k in ("nothing", "imports", "tiny"):
            mine = [n for n, kk in zip(lengths, kinds, strict=True) if kk == k]
            trivial[k] = {"chunks": len(mine), "share": round(len(mine) / len(lengths), 4)}
        every = [n for n, k in zip(lengths, kinds, strict=True) if k is not None]
        row: dict[str, Any] = {
            "chunks": len(chunks),
            **_token_summary(lengths),
            "kinds": dict(Counter(c.kind or "-" for c in chunks).most_common(12)),
            "trivial": trivial,
            "trivial_all": {
                "chunks": len(every),
                "share": round(len(every) / len(lengths), 4),
            },
        }
        for b in (256, 128):
            embedded = sum(min(n, b) for n in lengths)
            saved = sum(min(n, b) for n in every)
            row["trivial_all"][f"token_share_at_{b}"] = round(saved / embedded, 4)
            if model is not None:
                whole = sum(model(min(n, b)) for n in lengths)
                row["trivial_all"][f"time_share_at_{b}"] = round(
                    sum(model(min(n, b)) for n in every) / whole, 4
                )
        if args.examples:
            row["examples"] = {
                k: [c.content[:160] for c, kk in zip(chunks, kinds, strict=True) if kk == k][:4]
                for k in ("imports", "tiny")
            }
        out["corpora"][name] = row
        print(
            f"{name:16} {len(chunks):6} chunks, mean {row['mean_tokens']:6.1f} tokens, "
            f"trivial {row['trivial_all']['share']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    out["dev_half"] = {"chunks": len(dev_lengths), **_token_summary(dev_lengths)}
    return out


# --- Speed ----------------------------------------------------------------------------------


def _parse_variant(spec: str) -> dict[str, Any]:
    budget, *opts = spec.split(":")
    out: dict[str, Any] = {"budget": int(budget)}
    for o in opts:
        k, v = o.split("=")
        out[k] = int(v)
    return out


def _embedder(v: dict[str, Any]) -> Any:
    """The variant's embedder, open; its onnxruntime options set on the sessions it makes."""
    import onnxruntime as ort

    from codebase_mcp_search.adapters.onnx import OnnxEmbedder, model_files

    embedder = OnnxEmbedder(
        max_tokens=None if v["budget"] >= 256 else v["budget"],
        threads=v.get("threads"),
        parallel_runs=v.get("parallel", 1),
        # Derived graphs in the bench's cache, not the user's; the older recipes apart.
        cache_dir=SETS.parent / _models(v),
    )
    real_session, real_fuse = ort.InferenceSession, model_files._fuse_attention
    real_approximate = model_files._approximate
    spin, skip_norm = v.get("spin"), v.get("skipnorm")
    exact = v.get("fuse") == 0 or v.get("approx") == 0

    def session(path: str, options: Any, **kw: Any) -> Any:
        if spin is not None:
            options.add_session_config_entry("session.intra_op.allow_spinning", str(spin))
        if exact:
            kw.pop("disabled_optimizers", None)  # as before the approximations
        if skip_norm is not None:
            kw["disabled_optimizers"] = [] if skip_norm else ["SkipLayerNormFusion"]
        return real_session(path, options, **kw)

    ort.InferenceSession = session  # type: ignore[misc]
    if v.get("fuse") == 0:
        # The int8 graph as derived before issue 33's attention fusion.
        model_files._fuse_attention = lambda plain, fused, source: plain  # type: ignore[assignment]
    if exact:
        # The fused graph with the same vectors as the plain one (recipe mha-v2).
        model_files._approximate = lambda plain, fused, approx, source: fused  # type: ignore[assignment]
    try:
        asyncio.run(embedder.open())
    finally:
        ort.InferenceSession = real_session  # type: ignore[misc]
        model_files._fuse_attention = real_fuse  # type: ignore[assignment]
        model_files._approximate = real_approximate  # type: ignore[assignment]
    if "batch" in v:
        embedder._rows_per_run = v["batch"]
    return embedder


def _models(v: dict[str, Any]) -> str:
    """The variant's folder of derived graphs: one per recipe (the file name is the same)."""
    if v.get("fuse") == 0:
        return "models-unfused"
    return "models-exact" if v.get("approx") == 0 else "models"


def _child(spec: str, set_name: str, sets_dir: Path, save: Path | None = None) -> dict[str, Any]:
    """One run: load the embedder as the variant says, embed the set once (and save the
    vectors to ``save``, a .npy file)."""
    texts: list[str] = json.loads((sets_dir / f"{set_name}.json").read_text())
    t0 = time.perf_counter()
    embedder = _embedder(_parse_variant(spec))
    load_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    embedded = asyncio.run(embedder.embed_documents(texts))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    truncated = embedded.truncated
    if save is not None:
        import numpy as np

        np.save(save, np.asarray(embedded.vectors, dtype=np.float32))
    return {
        "variant": spec,
        "set": set_name,
        "texts": len(texts),
        "truncated": truncated,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "cpu_s_per_1000": round(1000 * cpu / len(texts), 2),
        "load_seconds": round(load_s, 2),
    }


def speed(args: argparse.Namespace) -> dict[str, Any]:
    variants = args.variants.split(",")
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    ratios: dict[str, list[float]] = {v: [] for v in variants}
    for i in range(args.runs):
        # Alternating, and the order turned each round, so no variant always follows another.
        order = variants if i % 2 == 0 else variants[::-1]
        round_rates: dict[str, float] = {}
        for v in order:
            cmd = [sys.executable, "-m", "bench.vector_cost", "child", v, args.set]
            cmd += ["--sets-dir", str(args.sets_dir)]
            one = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            print(json.dumps(one), file=sys.stderr, flush=True)
            runs[v].append(one)
            round_rates[v] = one["chunks_per_s"]
        for v in variants:
            ratios[v].append(round(round_rates[v] / round_rates[variants[0]], 3))
    summary = {
        v: {
            "chunks_per_s_median": round(statistics.median(r["chunks_per_s"] for r in rs), 1),
            "chunks_per_s": [r["chunks_per_s"] for r in rs],
            "cpu_s_per_1000_median": statistics.median(r["cpu_s_per_1000"] for r in rs),
            "cpu_s_per_1000": [r["cpu_s_per_1000"] for r in rs],
            f"ratio_to_{variants[0]}_per_round": ratios[v],
            f"ratio_to_{variants[0]}_median": round(statistics.median(ratios[v]), 3),
            "truncated": rs[0]["truncated"],
        }
        for v, rs in runs.items()
    }
    return {"set": args.set, "texts": runs[variants[0]][0]["texts"], "summary": summary}


def agree(args: argparse.Namespace) -> dict[str, Any]:
    """Each variant's vectors of the whole set against the first variant's: the cosine of
    every pair (least, mean), how many fall below 0.9999, how many are the same bit for bit."""
    import numpy as np

    variants = args.variants.split(",")
    vectors = []
    with tempfile.TemporaryDirectory(prefix="vector-agree-") as tmp:
        for i, v in enumerate(variants):
            save = Path(tmp) / f"{i}.npy"
            cmd = [sys.executable, "-m", "bench.vector_cost", "child", v, args.set]
            cmd += ["--sets-dir", str(args.sets_dir), "--save", str(save)]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            vectors.append(np.load(save))
    first = vectors[0]
    out: dict[str, Any] = {"set": args.set, "texts": len(first), "against": variants[0]}
    for v, these in zip(variants[1:], vectors[1:], strict=True):
        cosines = (these * first).sum(axis=1)
        out[v] = {
            "cosine_min": round(float(cosines.min()), 6),
            "cosine_mean": round(float(cosines.mean()), 7),
            "below_0.9999": int((cosines < 0.9999).sum()),
            "identical": int((these == first).all(axis=1).sum()),
        }
    return out


def interleave(args: argparse.Namespace) -> dict[str, Any]:
    """Every variant in one process, taking turns on slices of the set (the turn order
    rotating), so each sees the same drift of a shared machine: the time of each variant
    is the sum over its slices. A cross-check of ``speed``'s process-per-run figures."""
    variants = args.variants.split(",")
    texts: list[str] = json.loads((args.sets_dir / f"{args.set}.json").read_text())
    embedders = {spec: _embedder(_parse_variant(spec)) for spec in variants}
    seconds = dict.fromkeys(variants, 0.0)
    cpu = dict.fromkeys(variants, 0.0)
    slices = [texts[i : i + args.slice] for i in range(0, len(texts), args.slice)]
    for n, part in enumerate(slices):
        turn = variants[n % len(variants) :] + variants[: n % len(variants)]
        for spec in turn:
            t0, c0 = time.perf_counter(), time.process_time()
            asyncio.run(embedders[spec].embed_documents(part))
            seconds[spec] += time.perf_counter() - t0
            cpu[spec] += time.process_time() - c0
    first = variants[0]
    return {
        "set": args.set,
        "texts": len(texts),
        "slice": args.slice,
        "summary": {
            spec: {
                "seconds": round(seconds[spec], 2),
                "chunks_per_s": round(len(texts) / seconds[spec], 1),
                f"ratio_to_{first}": round(seconds[first] / seconds[spec], 3),
                # CPU of the whole process while the variant ran (its runs' threads).
                "cpu_s_per_1000": round(1000 * cpu[spec] / len(texts), 2),
                f"cpu_ratio_to_{first}": round(cpu[first] / cpu[spec], 3),
            }
            for spec in variants
        },
    }


def cost(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds of one run against the token count: every length from 8 to 256 in steps of 8,
    a text of ``a`` words cut to the length, timed ``repeat`` times (median)."""
    import numpy as np

    from codebase_mcp_search.adapters.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    asyncio.run(embedder.open())
    texts: list[str] = json.loads((args.sets_dir / "dev2.json").read_text())
    ids = [e.ids for e in embedder._tokenizer.encode_batch(texts) if len(e.ids) == 256]
    points: list[tuple[int, float]] = []
    for n in range(8, 257, 8):
        times = []
        for one in ids[: args.repeat]:
            row = [*one[: n - 1], one[-1]]
            t0 = time.perf_counter()
            embedder._run([row])
            times.append(time.perf_counter() - t0)
        points.append((n, statistics.median(times)))
    xs = np.array([p[0] for p in points], dtype=float)
    ys = np.array([p[1] for p in points])
    b, a = np.polyfit(xs, ys, 1)
    return {
        "points": [{"tokens": n, "seconds": round(s, 5)} for n, s in points],
        "fit": {"a_s": round(float(a), 5), "b_s_per_token": round(float(b), 7)},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("texts")
    t.add_argument("--out-dir", type=Path, default=SETS)
    s = sub.add_parser("stats")
    s.add_argument("--cost", type=Path, default=None, help="a result of `cost` (time shares)")
    s.add_argument("--examples", action="store_true")
    s.add_argument("--out", default=None)
    sp = sub.add_parser("speed")
    sp.add_argument("--set", default="dev2")
    sp.add_argument("--variants", default="256,128,96")
    sp.add_argument("--runs", type=int, default=3)
    sp.add_argument("--sets-dir", type=Path, default=SETS)
    sp.add_argument("--out", default=None)
    il = sub.add_parser("interleave")
    il.add_argument("--set", default="dev2")
    il.add_argument("--variants", default="256,128,96")
    il.add_argument("--slice", type=int, default=100)
    il.add_argument("--sets-dir", type=Path, default=SETS)
    il.add_argument("--out", default=None)
    c = sub.add_parser("cost")
    c.add_argument("--repeat", type=int, default=15)
    c.add_argument("--sets-dir", type=Path, default=SETS)
    c.add_argument("--out", default=None)
    ag = sub.add_parser("agree")
    ag.add_argument("--set", default="w10k")
    ag.add_argument("--variants", default="256:fuse=0,256")
    ag.add_argument("--sets-dir", type=Path, default=SETS)
    ag.add_argument("--out", default=None)
    ch = sub.add_parser("child")
    ch.add_argument("variant")
    ch.add_argument("set")
    ch.add_argument("--sets-dir", type=Path, default=SETS)
    ch.add_argument("--save", type=Path, default=None)
    args = p.parse_args()
    if args.command == "texts":
        emit(write_sets(args.out_dir), None)
    elif args.command == "stats":
        emit(stats(args), args.out)
    elif args.command == "speed":
        emit(speed(args), args.out)
    elif args.command == "interleave":
        emit(interleave(args), args.out)
    elif args.command == "cost":
        emit(cost(args), args.out)
    elif args.command == "agree":
        emit(agree(args), args.out)
    else:
        print(json.dumps(_child(args.variant, args.set, args.sets_dir, args.save)))


if __name__ == "__main__":
    main()
