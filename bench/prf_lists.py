"""The lists of ``bench.prf``'s pseudo-relevance feedback: the expansion of a question from
the first results (``Feedback``), and each recording's lists built again under it (``rebuild``:
a second BM25 with the expansion terms at a weight, or, ``roc``, a second vector search from
the moved query vector). ``bench.prf`` has the method, its check and its cross-validation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench import lexical_fields
from codebase_mcp_search.adapters.memory.vector_index import VectorIndex, unit
from codebase_mcp_search.core import lexical


@dataclass(frozen=True)
class Feedback:
    """A second lexical list expanded from the top ``k`` of ``source`` ("lex" or "sem") by
    ``m`` terms at weight ``w``; or ("roc") a second semantic list, its query vector moved
    towards the top ``k`` lexical chunks' vectors by ``w`` (Rocchio); ``source`` None is
    today's lists."""

    source: str | None = None
    k: int = 0
    m: int = 0
    w: float = 0.0
    # The normalising bound: "all", every term asked for at its weight; "q", the question's
    # terms only (a chunk matching only the question scores as today; expansion adds to it).
    bound: str = "all"

    @property
    def name(self) -> str:
        if self.source is None:
            return "none"
        if self.source == "roc":
            return f"roc:{self.k}:{self.w:g}"
        tail = ":q" if self.bound == "q" else ""
        return f"{self.source}:{self.k}:{self.m}:{self.w:g}{tail}"

    @staticmethod
    def parse(text: str) -> Feedback:
        if text == "none":
            return Feedback()
        if text.startswith("roc:"):
            _, k, w = text.split(":")
            return Feedback("roc", int(k), 0, float(w))
        source, k, m, w, *bound = text.split(":")
        if source not in ("lex", "sem") or bound not in ([], ["q"]):
            raise SystemExit(f"feedback {text!r}: lex|sem:K:M:W[:q]")
        return Feedback(source, int(k), int(m), float(w), *bound)


class Index:
    """A recording's BM25 index under today's analysis, each chunk's terms kept for feedback,
    and the semantic list of each lexical list's question (``sem``)."""

    def __init__(self, data: dict[str, Any], vectors: dict[str, Any] | None = None) -> None:
        self.terms: dict[str, Counter[str]] = {}

        def terms_of(c: Any) -> Counter[str]:
            self.terms[c.id] = lexical.document_terms(c.content, c.file_path, c.symbol)
            return self.terms[c.id]

        self.postings, self.doc_len, self.by_id = lexical_fields.index_of(data["chunks"], terms_of)
        self.n = len(self.doc_len)
        self.avg = sum(self.doc_len.values()) / self.n
        self.idf = {t: lexical.idf(self.n, len(p)) for t, p in self.postings.items()}
        self.semantic = _semantic_keys(data)
        self.lexical_of = {v: k for k, v in reversed(self.semantic.items())}
        self.vectors = None
        if vectors is not None:  # content hash -> vector, as the recording's store held them
            self.vectors = VectorIndex.of(
                {c.id: unit(vectors[c.content_hash]) for c in data["chunks"]}
            )
            self.row = {cid: i for i, cid in enumerate(self.vectors.ids)}

    def expansion(self, terms: tuple[str, ...], chunks: list[Any], m: int) -> list[str]:
        """The ``m`` terms of ``chunks`` with the highest summed frequency x idf, ``terms``
        left out (ties by term)."""
        weight: dict[str, float] = {}
        asked = set(terms)
        for c in chunks:
            for t, tf in self.terms[c.id].items():
                if t not in asked:
                    weight[t] = weight.get(t, 0.0) + tf * self.idf[t]
        return sorted(weight, key=lambda t: (-weight[t], t))[:m]

    def search(
        self, terms: tuple[str, ...], extra: list[str], w: float, rule: str = "all"
    ) -> tuple[dict[str, float], float]:
        """Raw BM25 of ``terms`` at weight 1 and ``extra`` at ``w``, and the bound (``rule``:
        of both, or of ``terms`` alone)."""
        weighted = {t: self.idf[t] for t in dict.fromkeys(terms) if t in self.postings}
        bound = lexical.upper_bound(weighted.values())
        if w > 0:
            for t in extra:
                weighted.setdefault(t, self.idf[t] * w)
            if rule == "all":
                bound += lexical.upper_bound(self.idf[t] * w for t in extra)
        return lexical_fields.sums(weighted, self.postings, self.doc_len, self.avg), bound


def _semantic_keys(data: dict[str, Any]) -> dict[Any, Any]:
    """Each lexical list's key -> the key of its question's semantic list (the first question
    asking those terms)."""
    by_vector: dict[tuple[float, ...], list[Any]] = {}
    for key in data["vector"]:
        by_vector.setdefault(key[0], []).append(key)
    out: dict[Any, Any] = {}
    for q in data["queries"]:
        text = q["query"] if isinstance(q, dict) else q[0]
        terms = tuple(lexical.query_terms(text))
        for vkey in by_vector.get(tuple(data["vectors"][text]), []):
            if (terms, vkey[1]) in data["lexical"]:
                out.setdefault((terms, vkey[1]), vkey)
    missing = [k for k in data["lexical"] if k not in out]
    if missing:
        raise SystemExit(f"no semantic list for the lexical lists of {missing[:3]}")
    return out


def feedback_chunks(data: dict[str, Any], index: Index, key: Any, fb: Feedback) -> list[Any]:
    lists = data["lexical"] if fb.source == "lex" else data["vector"]
    hits = lists[key if fb.source == "lex" else index.semantic[key]][0]
    return [h.chunk for h in hits[: fb.k]]


def rocchio(data: dict[str, Any], fb: Feedback, index: Index) -> dict[str, Any]:
    """``data`` with every semantic list replaced by the list of its query vector plus ``w``
    times the mean unit vector of its question's top ``k`` lexical chunks (none: unchanged),
    searched as the memory store searches (``VectorIndex``: cosine, exact top k)."""
    if index.vectors is None:
        raise SystemExit("roc: --vectors DIR, the recording's vector caches")
    lists = {}
    for key, (hits, total) in data["vector"].items():
        vector, filters = key
        lkey = index.lexical_of.get(key)
        chunks = [h.chunk for h in data["lexical"][lkey][0][: fb.k]] if lkey else []
        if not chunks or fb.w == 0:
            lists[key] = (hits, total)
            continue
        rows = index.vectors.matrix[[index.row[c.id] for c in chunks]]
        moved = unit(vector) + fb.w * rows.mean(axis=0)
        lists[key] = index.vectors.search(index.by_id, list(moved), filters, len(hits))
    return {**data, "vector": lists}


def rebuild(data: dict[str, Any], fb: Feedback, index: Index) -> dict[str, Any]:
    """``data`` with every lexical list replaced by its second, expanded, list under ``fb``,
    or under ``roc`` every semantic list (the recorded lists when ``fb`` asks for none)."""
    if fb.source == "roc":
        return rocchio(data, fb, index)
    if fb.source is None or fb.w == 0 or fb.m == 0:
        return data
    lists = {}
    for key in data["lexical"]:
        terms, filters = key
        extra = index.expansion(terms, feedback_chunks(data, index, key, fb), fb.m)
        raw, bound = index.search(terms, extra, fb.w, fb.bound)
        lists[key] = lexical_fields.ranked(raw, bound, index.by_id, filters)
    return {**data, "lexical": lists}
