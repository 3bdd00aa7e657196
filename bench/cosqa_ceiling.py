"""What the default model allows on CoSQA: dense and fused MRR@10 over whole functions.

Issue 19 asks CoSQA dev hybrid MRR@10 of at least 0.55 with the default model. This measures,
outside the product's pipeline (one vector per function, no ranking stack, no chunking), the
levers a pipeline could pull with all-MiniLM-L6-v2 (the default ONNX int8 graph):

- the text a function is embedded as: as written; identifiers split into words; a line with
  the function's name in words before it; its name and docstring alone, and that view
  averaged with the code's vector;
- the text a query is embedded as, added to the plain query's similarity: a code-shaped
  rendering (``def remove_none_values_list():``), a docstring-shaped one;
- pseudo-relevance feedback: the query vector moved toward its top k functions;
- fusion with BM25 (the product's analyser and scoring): min-max over each list's top 100 as
  the product fuses, lexical weights 0.2 / 0.3 / 0.5; BM25 with the docstring and comments
  weighed up, the name weighed up, adjacent query words joined into identifiers
  (``file size`` -> ``filesize``).

Each figure counts the gold function's rank among all 6,267. Vectors are cached under
``bench/.cache``.

    python -m bench.cosqa_ceiling [--data ../shared/bench/cosqa] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.cosqa_eval import DEFAULT_DATA, _normalise
from bench.retrieval import emit
from codebase_mcp_search.adapters.onnx import OnnxEmbedder
from codebase_mcp_search.core import lexical

CACHE = Path(__file__).resolve().parent / ".cache"
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEF = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")
_DOCSTRING = re.compile(r"^\s*[rRuU]?(\"\"\"|''')(.*?)\1", re.DOTALL)
_PROSE = re.compile(r"(\"\"\"|''')(.*?)\1|#([^\n]*)", re.DOTALL)


def _words(name: str) -> str:
    return " ".join(p.lower() for p in _PARTS.findall(name))


def _name(code: str) -> str:
    m = _DEF.match(code)
    return m.group(1) if m else ""


def _split(code: str) -> str:
    """Identifiers of several words as those words (``get_file_size`` -> ``get file size``)."""

    def words(m: re.Match[str]) -> str:
        parts = _PARTS.findall(m.group(0))
        return " ".join(p.lower() for p in parts) if len(parts) > 1 else m.group(0)

    return _IDENT.sub(words, code)


def _sigdoc(code: str) -> str:
    rest = code.split("\n", 1)[1] if "\n" in code else ""
    m = _DOCSTRING.match(rest)
    doc = " ".join(m.group(2).split()) if m else ""
    return f"{_words(_name(code))}. {doc}".strip()


DOC_VIEWS: dict[str, Callable[[str], str]] = {
    "as written": lambda c: c,
    "identifiers split": _split,
    "name line first": lambda c: _words(_name(c)) + "\n" + c,
    "name and docstring": _sigdoc,
}


def _content_words(q: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", q.lower())
    return [w for w in words if w not in lexical.STOP_WORDS and w not in lexical.LANGUAGE_WORDS]


QUERY_VIEWS: dict[str, Callable[[str], str]] = {
    "code-shaped": lambda q: "def " + "_".join(_content_words(q)) + "():",
    "docstring-shaped": lambda q: '"""' + " ".join(_content_words(q)).capitalize() + '."""',
}


def mrr(scores: np.ndarray, gold: np.ndarray) -> float:
    g = scores[np.arange(len(gold)), gold][:, None]
    ranks = (scores > g).sum(1) + 1
    return round(float(np.where(ranks <= 10, 1.0 / ranks, 0.0).mean()), 4)


def top_minmax(scores: np.ndarray, k: int = 100, floor: float = 0.0) -> np.ndarray:
    """Each row's top ``k`` rescaled to [0, 1] (divided by at least ``floor``), 0 elsewhere."""
    out = np.zeros_like(scores)
    top = np.argsort(-scores, 1)[:, :k]
    for i in range(scores.shape[0]):
        v = scores[i, top[i]]
        out[i, top[i]] = (v - v.min()) / (max(v.max() - v.min(), floor) or 1.0)
    return out


def bm25(
    codes: Sequence[str],
    queries: Sequence[str],
    weights: tuple[int, int, int] = (1, 0, 1),
    joined: bool = False,
) -> np.ndarray:
    """BM25 of every function for every query, over the code, its docstring and comments,
    and its name, weighed (code, prose, name); ``joined``: adjacent query words also as one
    identifier."""
    w_code, w_prose, w_name = weights
    docs: list[Counter[str]] = []
    for code in codes:
        c: Counter[str] = Counter()
        for text, w in (
            (code, w_code),
            (" ".join(m.group(2) or m.group(3) or "" for m in _PROSE.finditer(code)), w_prose),
            (_name(code), w_name),
        ):
            if w:
                for t, f in Counter(lexical.analyse(text)).items():
                    c[t] += w * f
        docs.append(c)
    n = len(docs)
    lens = np.array([sum(c.values()) for c in docs])
    avg = float(lens.mean())
    df = Counter(t for c in docs for t in c)
    post: dict[str, list[tuple[int, int]]] = {}
    for j, c in enumerate(docs):
        for t, f in c.items():
            post.setdefault(t, []).append((j, f))
    out = np.zeros((len(queries), n), dtype=np.float32)
    for qi, q in enumerate(queries):
        terms = lexical.query_terms(q)
        if joined:
            words = _content_words(q)
            terms += [
                "".join(words[k : k + m])
                for m in (2, 3)
                for k in range(len(words) - m + 1)
                if "".join(words[k : k + m]) in df
            ]
        for t in dict.fromkeys(terms):
            if t not in df:
                continue
            idf = lexical.idf(n, df[t])
            for j, f in post[t]:
                out[qi, j] += lexical.term_score(f, int(lens[j]), avg, idf)
    return out


async def _vectors(emb: OnnxEmbedder, texts: Sequence[str], name: str) -> np.ndarray:
    path = CACHE / f"cosqa_ceiling_{name}.npy"
    if path.exists():
        loaded: np.ndarray = np.load(path)
        return loaded
    v = np.asarray((await emb.embed_documents(list(texts))).vectors, dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, v)
    return v


async def run(data: Path) -> dict[str, Any]:
    by_idx = {
        i: _normalise(c) for c, i in json.loads((data / "code_idx_map.txt").read_text()).items()
    }
    ids = sorted(by_idx)
    codes = [by_idx[i] for i in ids]
    spec = json.loads((data / "cosqa-retrieval-dev-500.json").read_text())
    texts = [q["doc"] for q in spec]
    position = {i: k for k, i in enumerate(ids)}
    gold = np.array([position[q["retrieval_idx"]] for q in spec])
    emb = OnnxEmbedder()
    await emb.open()
    q = np.asarray((await emb.embed_documents(texts)).vectors, dtype=np.float32)
    out: dict[str, Any] = {"functions": len(ids), "queries": len(texts), "model": emb.model}
    views = {}
    for k, (name, view) in enumerate(DOC_VIEWS.items()):
        views[name] = await _vectors(emb, [view(c) for c in codes], f"doc{k}")
        out[f"dense, functions embedded {name}"] = mrr(q @ views[name].T, gold)
    raw = views["as written"]
    for a in (0.2, 0.5):
        mixed = raw + a * views["name and docstring"]
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        out[f"dense, code + {a} x name-and-docstring vector"] = mrr(q @ mixed.T, gold)
    dense = q @ raw.T
    for name, view in QUERY_VIEWS.items():
        q2 = np.asarray((await emb.embed_documents([view(t) for t in texts])).vectors)
        for a in (0.2, 0.5):
            out[f"dense, plus {a} x {name} query"] = mrr(dense + a * (q2 @ raw.T), gold)
    for k in (3, 10):
        top = np.argsort(-dense, 1)[:, :k]
        for a in (0.2, 0.5):
            moved = q + a * raw[top].mean(1)
            moved /= np.linalg.norm(moved, axis=1, keepdims=True)
            out[f"dense, feedback from top {k} at {a}"] = mrr(moved @ raw.T, gold)
    dense_n = top_minmax((dense + 1) / 2, floor=0.10)
    for name, kwargs in {
        "code + name (as the product)": {},
        "prose x2": {"weights": (1, 2, 2)},
        "name x3": {"weights": (1, 0, 3)},
        "adjacent words joined": {"joined": True},
    }.items():
        lex = bm25(codes, texts, **kwargs)  # type: ignore[arg-type]
        lex_n = top_minmax(lex)
        out[f"BM25 {name}"] = mrr(lex, gold)
        for w in (0.2, 0.3, 0.5):
            out[f"fused, BM25 {name}, lexical weight {w}"] = mrr(dense_n + w * lex_n, gold)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    emit(asyncio.run(run(Path(args.data))), args.out)


if __name__ == "__main__":
    main()
