"""Query words found together, in the index (issue 36, round five).

BM25 scores a bag of words: a chunk saying ``event_loop`` and one saying "event" in a comment
and "loop" fifty lines on score alike for "event loop". The query's *pairs* are its adjacent
words, split as the analyser splits identifiers (stop words and language names dropped).

- ``--weights``: each two adjacent words of a chunk's content (identifier-split) as one more
  term, in a field of its own weighed ``w`` (its frequency times ``w``, as ``lexical.Fields``
  weighs a field), and the query's pairs as query terms. Reports the postings they add.
- ``--joined`` (no index change): the query's pairs joined into the term the analyser already
  derives from a whole identifier (``event loop`` -> ``eventloop``, as from ``event_loop`` or
  ``EventLoop``), an extra query term scored times its weight.

Every recorded lexical list is rebuilt from the recordings' chunks as ``bench.lexical_fields``
rebuilds them (weight 0 reproduces the recorded lists exactly), the three evals are scored
through the real ``SearchService``, and the grid is cross-validated as ``bench.fit_ranker``
does (leave one of the 18 groups out; a configuration admissible only if no eval block is
below today's in hybrid or lexical mode). The ranking-side gain measured beside it (bench/
README.md, round five) is in the branch's history, not here: it was not kept.

    python -m bench.proximity --dir DIR [--weights 0.25,0.5,1] [--joined 0.25,0.5,1]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import time
from collections import Counter
from typing import Any

import numpy as np

from bench import fit_ranker, lexical_fields, replay, replay_store
from bench.retrieval import Variant, emit
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.ranking import RankingConfig

MODES = ("hybrid", "lexical", "semantic")
Pair = tuple[str, str]
# A word's parts, as the analyser splits identifiers (``lexical._PARTS``).
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def word_parts(text: str) -> list[tuple[str, ...]]:
    """Each word of ``text`` as its parts analysed (``get_user_name`` -> ``("get", "user",
    "name")``, without the whole identifier's term); words with no part kept are left out."""
    out = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        parts = tuple(t for part in _PARTS.findall(word) for t in lexical.analyse(part))
        if parts:
            out.append(parts)
    return out


def query_pairs(text: str) -> tuple[Pair, ...]:
    """The query's adjacent words (analysed parts, without language names), each pair once
    in either order, first seen first; a word repeated next to itself is no pair."""
    parts = [p for w in word_parts(text) for p in w if p not in lexical.LANGUAGE_WORDS]
    pairs: dict[Pair, None] = {}
    for a, b in itertools.pairwise(parts):
        if a != b and (b, a) not in pairs:
            pairs[(a, b)] = None
    return tuple(pairs)


async def evaluate(
    datas: dict[str, dict[str, Any]], variant: Variant, modes: tuple[str, ...]
) -> dict[str, dict[str, list[float]]]:
    """Per mode, per group, each query's metric under ``variant``."""
    out: dict[str, dict[str, list[float]]] = {}
    for mode in modes:
        groups: dict[str, list[float]] = {}
        for name, data in datas.items():
            if name == "@cosqa":
                groups[name] = lexical_fields._rr(await replay.score_cosqa(data, variant, mode))
            elif name == "@own":
                groups[name] = lexical_fields._rr(await replay.score_own(data, variant, mode))
            else:
                groups[name] = [r["ndcg"] for r in await replay.score_repo(data, variant, mode)]
        out[mode] = groups
    return out


def _texts(data: dict[str, Any]) -> list[str]:
    return [q["query"] if isinstance(q, dict) else q[0] for q in data["queries"]]


def pair_term(a: str, b: str) -> str:
    """Two words as one term: no analysed term holds a space."""
    return f"{a} {b}"


def content_pairs(content: str) -> Counter[str]:
    """The adjacent words of ``content``'s analysed parts, as terms with their counts."""
    parts = [p for w in word_parts(content) for p in w]
    return Counter(pair_term(a, b) for a, b in itertools.pairwise(parts) if a != b)


def joined_terms(text: str) -> list[str]:
    """The query's adjacent words as one identifier's whole term (``event loop`` ->
    ``eventloop``, the term the analyser derives from ``event_loop`` and ``EventLoop``)."""
    return [lexical._stem(a + b) for a, b in query_pairs(text)]


def rebuild_pairs(
    data: dict[str, Any], weight: float, joined: float = 0.0
) -> tuple[dict[str, Any], int, int]:
    """``data`` with every lexical list recomputed with pair terms weighed ``weight`` (0:
    today's lists), or (``joined`` above 0) today's postings searched for the query's pairs
    joined into one identifier's term as well, that term's score times ``joined``; and the
    postings (term, chunk) of today's terms and of the pair terms."""
    postings: dict[str, dict[str, float]] = {}
    doc_len: dict[str, float] = {}
    by_id = {}
    plain = paired = 0
    for c in data["chunks"]:
        by_id[c.id] = c
        terms: dict[str, float] = dict(lexical.document_terms(c.content, c.file_path, c.symbol))
        plain += len(terms)
        length = float(sum(terms.values()))
        pairs = content_pairs(c.content)
        paired += len(pairs)
        if weight > 0:
            for t, tf in pairs.items():
                terms[t] = tf * weight
                length += tf * weight
        for t, freq in terms.items():
            postings.setdefault(t, {})[c.id] = freq
        doc_len[c.id] = length
    n = len(doc_len)
    avg = sum(doc_len.values()) / n
    # The query text behind each recorded list (its key holds the text's terms only).
    by_terms = {tuple(lexical.query_terms(t)): t for t in _texts(data)}
    lists = {}
    for key in data["lexical"]:
        terms, filters = key
        wanted = list(dict.fromkeys(terms))
        scale: dict[str, float] = {}
        if weight > 0 and tuple(terms) in by_terms:
            wanted += [pair_term(a, b) for a, b in query_pairs(by_terms[tuple(terms)])]
        if joined > 0 and tuple(terms) in by_terms:
            extra = [t for t in joined_terms(by_terms[tuple(terms)]) if t not in wanted]
            wanted += extra
            scale = dict.fromkeys(extra, joined)
        idfs = {t: lexical.idf(n, len(postings[t])) for t in wanted if t in postings}
        raw: dict[str, float] = {}
        for t, term_idf in idfs.items():
            weighed = term_idf * scale.get(t, 1.0)
            for cid, freq in postings[t].items():
                raw[cid] = raw.get(cid, 0.0) + _term_score(freq, doc_len[cid], avg, weighed)
        bound = lexical.upper_bound(w * scale.get(t, 1.0) for t, w in idfs.items())
        lists[key] = lexical_fields.ranked(raw, bound, by_id, filters)
    return {**data, "lexical": lists}, plain, paired


def _term_score(tf: float, doc_len: float, avg_len: float, term_idf: float) -> float:
    norm = lexical.K1 * (1.0 - lexical.B + lexical.B * (doc_len / avg_len))
    return term_idf * (tf * (lexical.K1 + 1.0)) / (tf + norm)


def _report(
    configs: list[dict[str, Any]], results: list[dict[str, dict[str, list[float]]]]
) -> dict[str, Any]:
    groups = sorted(results[0]["hybrid"])
    scores = fit_ranker.group_scores(results)
    allowed = {g: np.ones(len(configs), dtype=bool) for g in [*groups, "*"]}
    return {
        "groups": groups,
        "configurations": configs,
        "by_configuration": [
            fit_ranker.summary(groups, {m: scores[m][i] for m in MODES})
            for i in range(len(configs))
        ],
        "by_configuration_and_group": [
            {m: {g: round(float(scores[m][i][j]), 4) for j, g in enumerate(groups)} for m in MODES}
            for i in range(len(configs))
        ],
        **fit_ranker.cross_validate(configs, scores, groups, allowed),
    }


def _row(configs: dict[str, Any], r: dict[str, dict[str, list[float]]], started: float) -> None:
    one = fit_ranker.group_scores([r])
    row = fit_ranker.summary(sorted(r["hybrid"]), {m: one[m][0] for m in MODES})
    print(f"{configs} {json.dumps(row)} ({time.perf_counter() - started:.0f} s)", flush=True)


def run_pairs(datas: dict[str, dict[str, Any]], weights: list[float], joined: list[float]) -> Any:
    configs: list[dict[str, Any]] = [{"pair_weight": 0.0, "joined_weight": 0.0}]
    configs += [{"pair_weight": w, "joined_weight": 0.0} for w in weights if w > 0]
    configs += [{"pair_weight": 0.0, "joined_weight": w} for w in joined if w > 0]
    results: list[dict[str, dict[str, list[float]]]] = []
    semantic: dict[str, list[float]] = {}
    postings: dict[str, Any] = {}
    for c in configs:
        started = time.perf_counter()
        rebuilt = {}
        plain = paired = 0
        for name, data in datas.items():
            rebuilt[name], p, q = rebuild_pairs(data, c["pair_weight"], c["joined_weight"])
            if not name.startswith("@"):
                plain, paired = plain + p, paired + q
        postings = {"dev_half_postings": plain, "pair_postings": paired}
        r = asyncio.run(
            evaluate(rebuilt, Variant(RankingConfig(), {}), MODES if not results else MODES[:2])
        )
        semantic = semantic or r["semantic"]
        r.setdefault("semantic", semantic)
        results.append(r)
        _row(c, r, started)
    print(f"postings on the dev half: {postings}", flush=True)
    return {**_report(configs, results), **postings}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--weights", default="0.25,0.5,1", help="pair terms' field weights")
    p.add_argument("--joined", default="0.25,0.5,1", help="joined pair terms' query weights")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    datas = replay_store.load_recordings(args.dir)
    report = run_pairs(
        datas,
        [float(w) for w in args.weights.split(",") if w],
        [float(w) for w in args.joined.split(",") if w],
    )
    emit(report, args.out)


if __name__ == "__main__":
    main()
