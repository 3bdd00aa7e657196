"""Long chunks embedded whole, in windows of the model's length (issue 36, round eleven).

all-MiniLM-L6-v2 reads 256 word pieces; a chunk may hold 512 cl100k tokens, so a long chunk's
vector is the vector of its beginning (31% of the development half's chunks are longer:
``bench/README.md#cheaper-vectors``). Cutting chunks at 128 word pieces cost quality there,
which suggested that the rest of a long chunk is evidence the semantic list lacks. Measured
here: each long chunk's rest embedded in windows, the chunk's vector one of

- ``first``: the beginning alone, as today (the identity check: every list as recorded);
- ``mean``: the normalised mean of its windows' unit vectors;
- ``wmean``: the same, each window weighted by its word pieces;
- ``head2``: the mean with the beginning counted twice;
- ``max``: every window a vector of its own, the chunk scored by its best;
- ``pair``: the mean of the beginning's cosine and ``wmean``'s; ``either``: the better one.

A window after the first starts at the line where the previous one was cut (so that line is
read whole) and packs whole lines up to the model's length (a single longer line is cut by
the model). ``embed`` embeds the windows with the product's default embedder (the int8 graph
the recordings were made with: a chunk re-embedded whole matches its recorded vector to 1e-7)
and keeps them in one file; ``rewrite`` writes a copy of the recordings whose semantic lists
are ranked by a variant's vectors (the lexical lists untouched), to score with
``bench.replay score`` and refit with ``bench.fit_ranker --reference``.

    python -m bench.chunk_windows embed --dir REC --out WIN.pkl
    python -m bench.chunk_windows rewrite --dir REC --windows WIN.pkl --variant wmean --out DIR
    python -m bench.replay score --dir DIR --modes hybrid,lexical,semantic --by-repo
    python -m bench.fit_ranker --dir DIR --reference REC --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import pickle
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import context_text
from bench.replay_store import load_recordings
from codebase_mcp_search.adapters.onnx import OnnxEmbedder
from codebase_mcp_search.adapters.onnx.model_files import builtin_files, load_tokenizer
from codebase_mcp_search.core.models import ScoredChunk

# The model's 256 positions less [CLS] and [SEP].
BUDGET = 254
VARIANTS = ("first", "mean", "wmean", "head2", "max", "pair", "either")
CACHE = Path(__file__).parent / ".cache"


class Counter:
    """Word pieces of a text, as the model's tokenizer splits it (no special tokens)."""

    def __init__(self) -> None:
        self._tokenizer = load_tokenizer(builtin_files())
        self._tokenizer.enable_truncation(1 << 30)

    def __call__(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids) - 2


def windows(text: str, count: Counter, budget: int = BUDGET) -> list[tuple[str, int]]:
    """The windows after the model's own cut of ``text``, with their word pieces: whole lines
    packed up to ``budget``, each starting at the line the previous window cut."""
    lines = text.split("\n")
    sizes = [count(line) for line in lines]
    i, used = 0, 0
    while i < len(lines) and used + sizes[i] <= budget:
        used += sizes[i]
        i += 1
    out: list[tuple[str, int]] = []
    while i < len(lines):
        start, used = i, 0
        while i < len(lines) and (used + sizes[i] <= budget or i == start):
            used += sizes[i]
            i += 1
        window = "\n".join(lines[start:i])
        if window.strip():
            out.append((window, min(used, budget)))
    return out


def _cached_vectors(group: str) -> dict[str, np.ndarray]:
    """``bench.replay``'s plain vectors of a group, by ``context_text.key``."""
    if group == "@cosqa":
        files = [CACHE / "replay_onnx_ctx-plain_cosqa.npz"]
    elif group == "@own":
        files = [Path(f) for f in sorted(glob.glob(str(CACHE / "replay_onnx_ctx-plain_own_*.npz")))]
    else:
        files = [CACHE / f"repo_search_onnx_ctx-plain_{group}.npz"]
    out: dict[str, np.ndarray] = {}
    for f in files:
        z = np.load(f, allow_pickle=False)
        out.update(zip(z["hashes"].tolist(), z["vectors"], strict=True))
    return out


async def embed(args: argparse.Namespace) -> dict[str, Any]:
    count = Counter()
    embedder = OnnxEmbedder()
    out: dict[str, Any] = {}
    for group, data in load_recordings(args.dir).items():
        vectors = _cached_vectors(group)
        first: dict[str, tuple[np.ndarray, int]] = {}
        rest: dict[str, list[tuple[str, int]]] = {}
        for c in data["chunks"]:
            size = count(c.content)
            first[c.id] = (vectors[context_text.key("plain", c)], max(1, min(size, BUDGET)))
            if c.content_hash not in rest:
                rest[c.content_hash] = windows(c.content, count) if size > BUDGET else []
        texts = [(h, w, n) for h, ws in rest.items() for w, n in ws]
        started = time.perf_counter()
        embedded = []
        for at in range(0, len(texts), 64):
            result = await embedder.embed_documents([w for _, w, _ in texts[at : at + 64]])
            embedded += [np.asarray(v, dtype=np.float32) for v in result.vectors]
        by_hash: dict[str, list[tuple[np.ndarray, int]]] = {}
        for (h, _, n), v in zip(texts, embedded, strict=True):
            by_hash.setdefault(h, []).append((v, n))
        out[group] = {"first": first, "rest": by_hash}
        long = sum(1 for ws in rest.values() if ws)
        print(
            f"{group}: {len(rest)} texts, {long} over {BUDGET} word pieces, {len(texts)} "
            f"windows ({sum(n for _, _, n in texts)} word pieces) in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def chunk_rows(
    chunks: list[Any], group: dict[str, Any], variant: str
) -> tuple[np.ndarray, np.ndarray]:
    """The variant's vectors (one per chunk, or one per window for ``max``) and the index of
    the chunk each row belongs to."""
    rows: list[np.ndarray] = []
    owner: list[int] = []
    for i, c in enumerate(chunks):
        v0, n0 = group["first"][c.id]
        parts = [(_unit(v0), n0)] + [
            (_unit(v), n) for v, n in group["rest"].get(c.content_hash, [])
        ]
        if variant == "first" or len(parts) == 1:
            mine = [parts[0][0]]
        elif variant == "mean":
            mine = [_unit(np.sum([v for v, _ in parts], axis=0))]
        elif variant == "wmean":
            mine = [_unit(np.sum([v * n for v, n in parts], axis=0))]
        elif variant in ("pair", "either"):
            # The beginning's and ``wmean``'s vectors: their mean cosine (``pair``, a row
            # not renormalised) or the better of the two (``either``).
            w = _unit(np.sum([v * n for v, n in parts], axis=0))
            mine = [(parts[0][0] + w) / 2] if variant == "pair" else [parts[0][0], w]
        elif variant == "head2":
            mine = [_unit(2 * parts[0][0] + np.sum([v for v, _ in parts[1:]], axis=0))]
        else:
            mine = [v for v, _ in parts]
        rows += mine
        owner += [i] * len(mine)
    return np.stack(rows).astype(np.float32), np.asarray(owner)


def semantic_lists(data: dict[str, Any], group: dict[str, Any], variant: str) -> tuple[Any, int]:
    """The recording's semantic lists ranked by ``variant``'s vectors (same depth, filters,
    tie order and totals as the store's), and how many came out as recorded."""
    chunks = data["chunks"]
    matrix, owner = chunk_rows(chunks, group, variant)
    lists, same = {}, 0
    for key, (hits, total) in data["vector"].items():
        vector, filters = key
        scores = matrix @ _unit(np.asarray(vector, dtype=np.float32))
        best = np.full(len(chunks), -2.0, dtype=np.float32)
        np.maximum.at(best, owner, scores)
        scored = [(c, float(best[i])) for i, c in enumerate(chunks) if filters.matches(c)]
        scored.sort(key=lambda cs: (-cs[1], cs[0].file_path, cs[0].start_line))
        new = [ScoredChunk.of(c, s) for c, s in scored[: len(hits)]]
        same += [h.chunk.id for h in new] == [h.chunk.id for h in hits]
        lists[key] = (new, total)
    return lists, same


def rewrite(args: argparse.Namespace) -> None:
    groups = pickle.loads(Path(args.windows).read_bytes())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(Path(args.dir).glob("*.pkl")):
        name = f"@{f.stem}" if f.stem in ("cosqa", "own") else f.stem.removeprefix("repo_")
        if name not in groups:
            shutil.copy(f, out / f.name)
            continue
        data = pickle.loads(f.read_bytes())
        data["vector"], same = semantic_lists(data, groups[name], args.variant)
        (out / f.name).write_bytes(pickle.dumps(data))
        print(f"{args.variant} {name}: {same}/{len(data['vector'])} lists as recorded", flush=True)
        if args.variant == "first" and same != len(data["vector"]):
            raise SystemExit(f"{name}: the beginning alone does not reproduce the recording")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("embed")
    e.add_argument("--dir", required=True)
    e.add_argument("--out", required=True)
    r = sub.add_parser("rewrite")
    r.add_argument("--dir", required=True)
    r.add_argument("--windows", required=True)
    r.add_argument("--variant", choices=VARIANTS, required=True)
    r.add_argument("--out", required=True)
    args = p.parse_args()
    if args.cmd == "embed":
        Path(args.out).write_bytes(pickle.dumps(asyncio.run(embed(args))))
    else:
        rewrite(args)


if __name__ == "__main__":
    main()
