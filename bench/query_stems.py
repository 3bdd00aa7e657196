"""Stems at query time, the index unchanged (issue 36, round six).

Round five (``bench.lexical_stems``) found stems worth having in lexical mode as an extra BM25
field, but that field doubles the postings. This script measures the query-side form, which
leaves the index as it is: each analysed query term ``t`` scores as today, plus ``w`` times
the BM25 of a pseudo-term whose postings are the union of the index terms sharing ``t``'s
stem (the variants, looked up in the index's own vocabulary: a stem -> terms map). In a
chunk the pseudo-term's frequency is the sum of its variants' (field-weighted) frequencies,
its document frequency the number of chunks holding any of them; document lengths are
today's. The normalising bound counts the pseudo-term as any term: ``w x idf x (k1 + 1)``.

Choices where the design was open: query terms sharing a stem ask for their pseudo-term once
(the same evidence counts once); a pseudo-term holds ``t`` itself (an exact match scores its
term and its stem, another form its stem only), so a chunk holding only another form of the
word now matches; a weight of 0 asks for no pseudo-term at all (no chunk joins the matches
with a zero score), which is today's search exactly (``--check``).

Scored as ``bench.lexical_stems`` scores (the memory store's BM25 over every chunk of the
recordings; the real ``SearchService`` with the default ranking; leave one of the 18 groups
out, admissible only if no eval block is below today's in hybrid or lexical mode), two ways:
the expanded lexical list in every mode, and in lexical mode only (hybrid keeps today's list).

    python -m bench.query_stems --dir DIR --check     # w = 0 is today's lists, exactly;
                                                      # w > 0 equals round five's stem field
    python -m bench.query_stems --dir DIR [--stemmers light,light+,snowball]
        [--weights 0.25,0.5,0.75,1,1.25,1.5] [--df union|sum] [--workers 1] [--out FILE]
    python -m bench.query_stems --dir DIR --combine A.json,B.json [--stemmers ...] [--out FILE]
    python -m bench.query_stems --dir DIR --cost none,light+:1.25,light+:1.25:sum

Round nine adds ``genN``: Snowball's stems, each group the forms ``core.stems.variants``
writes (at most N; the product's cap without N) that the index holds, no vocabulary map: what
the product asks for in lexical mode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import fit_ranker, lexical_fields, lexical_stems, replay_store
from bench.retrieval import emit
from codebase_mcp_search.core import lexical, stems

MODES = ("hybrid", "lexical", "semantic")


@dataclass(frozen=True)
class QueryStems:
    """A query-side expansion: ``stemmer`` None (or ``weight`` 0) is today's search."""

    stemmer: str | None = None
    weight: float = 0.0
    # A pseudo-term's document frequency: "union", the chunks holding any variant (exact);
    # "sum", the variants' document frequencies summed, at most the number of chunks (what
    # a store reads from each term's frequency without merging their postings).
    df: str = "union"

    @property
    def name(self) -> str:
        if self.stemmer is None:
            return "none"
        return f"{self.stemmer}:{self.weight:g}" + (":sum" if self.df == "sum" else "")

    @staticmethod
    def parse(text: str) -> QueryStems:
        if text == "none":
            return QueryStems()
        stemmer, w, *df = text.split(":")
        return QueryStems(stemmer, float(w), *df)


class Index:
    """A recording's BM25 index under today's analysis, with the stem -> terms map of its
    vocabulary and the pseudo-terms' postings, built on first use."""

    def __init__(self, data: dict[str, Any], stemmer: str | None) -> None:
        self.postings, self.doc_len, self.by_id = lexical_fields.index_of(
            data["chunks"], lambda c: lexical.document_terms(c.content, c.file_path, c.symbol)
        )
        self.n = len(self.doc_len)
        self.avg = sum(self.doc_len.values()) / self.n
        # "gen[N]": Snowball's stems, each group the forms ``core.stems.variants`` writes (at
        # most N; the product's cap by default) that the index holds, no vocabulary map.
        self.generated = stemmer is not None and stemmer.startswith("gen")
        self.variants: dict[str, list[str]] = {}
        if self.generated:
            assert stemmer is not None
            # "genabbr": all written forms, and the group of each word in ``ABBREVIATIONS``
            # holds the other words of its entry (the round-two table, as forms of a word).
            self.abbreviations = stemmer.startswith("genabbr")
            cap = stemmer[7:] if self.abbreviations else stemmer[3:]
            self.cap = int(cap) if cap else stems.MAX_VARIANTS
            self.stem = stems.stem
        else:
            self.stem = lexical_stems.memo(lexical_stems.STEMMERS[stemmer or "light"]())
            for term in self.postings:
                self.variants.setdefault(self.stem(term), []).append(term)
        self._union: dict[str, dict[str, int]] = {}

    abbreviations = False

    def keys(self, terms: tuple[str, ...]) -> list[str]:
        """The keys of the groups ``terms`` ask for: their distinct stems, or (generated) one
        per ``core.stems.groups`` group, its forms the index holds, as the product asks."""
        if not self.generated:
            return list(dict.fromkeys(self.stem(t) for t in terms))
        found = []
        for forms in _with_abbreviations(stems.groups(terms, self.cap), self.abbreviations):
            key = "\0".join(forms)
            if key not in self.variants:
                self.variants[key] = [v for v in forms if v in self.postings]
            found.append(key)
        return found

    def union(self, stem: str) -> dict[str, int]:
        """The pseudo-term of ``stem``: chunk id -> the summed frequency of its variants."""
        got = self._union.get(stem)
        if got is None:
            got = {}
            for term in self.variants.get(stem, ()):
                for cid, tf in self.postings[term].items():
                    got[cid] = got.get(cid, 0) + tf
            self._union[stem] = got
        return got

    def df(self, stem: str, union: dict[str, int], rule: str) -> int:
        if rule == "union":
            return len(union)
        return min(self.n, sum(len(self.postings[v]) for v in self.variants[stem]))

    def search(
        self, terms: tuple[str, ...], weight: float, df: str = "union"
    ) -> tuple[dict[str, float], float, tuple[int, int]]:
        """Raw scores and the bound for ``terms`` expanded at ``weight``; and the cost: the
        postings read (of the distinct index terms asked for: the query's and, expanded,
        their variants) and the postings summed (the exact terms', plus the pseudo-terms')."""
        raw: dict[str, float] = {}
        bound = 0.0
        exact = [t for t in dict.fromkeys(terms) if t in self.postings]
        lists = [(self.postings[t], 1.0, len(self.postings[t])) for t in exact]
        asked = set(exact)
        if weight > 0:
            keys = self.keys(terms)
            lists += [(u, weight, self.df(s, u, df)) for s in keys if (u := self.union(s))]
            asked.update(v for s in keys for v in self.variants.get(s, ()))
        for postings, w, freq in lists:
            term_idf = lexical.idf(self.n, freq) * w
            bound += lexical.upper_bound([term_idf])
            for cid, tf in postings.items():
                raw[cid] = raw.get(cid, 0.0) + lexical.term_score(
                    tf, self.doc_len[cid], self.avg, term_idf
                )
        read = sum(len(self.postings[t]) for t in asked)
        return raw, bound, (read, sum(len(p) for p, _, _ in lists))


def rebuild(data: dict[str, Any], qs: QueryStems, index: Index | None = None) -> dict[str, Any]:
    """``data`` with every lexical list recomputed under ``qs``, to the recorded depth; also
    the mean postings a search reads (``read``: the exact terms', plus the variants' when
    expanded) and sums (``summed``)."""
    index = index or Index(data, qs.stemmer)
    lists = {}
    reads = []
    for key in data["lexical"]:
        terms, filters = key
        raw, bound, cost = index.search(terms, qs.weight if qs.stemmer else 0.0, qs.df)
        lists[key] = lexical_fields.ranked(raw, bound, index.by_id, filters)
        reads.append(cost)
    read, summed = np.mean(reads, axis=0)
    return {**data, "lexical": lists, "read": float(read), "summed": float(summed)}


def cost(datas: dict[str, dict[str, Any]], names: list[str], rounds: int = 3) -> dict[str, Any]:
    """The BM25 of every recorded lexical search as the memory store computes it (dicts,
    plain Python): ms per search by eval, best of ``rounds``, the variants by turns; a
    pseudo-term's postings merged afresh for each search (no cache of them)."""
    per: dict[str, dict[str, float]] = {n: {} for n in names}
    for group, data in datas.items():
        qs = [QueryStems.parse(n) for n in names]
        index = Index(data, qs[-1].stemmer)
        if len({q.stemmer for q in qs} - {None}) > 1:
            raise SystemExit("--cost: one stemmer per run")
        keys = [terms for terms, _ in data["lexical"]]
        best = dict.fromkeys(names, float("inf"))
        for _ in range(rounds):
            for name, q in zip(names, qs, strict=True):
                started = time.perf_counter()
                for terms in keys:
                    index._union.clear()
                    index.search(terms, q.weight if q.stemmer else 0.0, q.df)
                best[name] = min(best[name], time.perf_counter() - started)
        for name in names:
            per[name][group] = best[name] / len(keys) * 1e3
    return {
        n: {
            "repo_ms": round(float(np.mean([v for g, v in per[n].items() if g[0] != "@"])), 3),
            "cosqa_ms": round(per[n].get("@cosqa", float("nan")), 3),
            "own_ms": round(per[n].get("@own", float("nan")), 3),
        }
        for n in names
    }


def check(datas: dict[str, dict[str, Any]], weights: list[float]) -> None:
    """w = 0 reproduces every recorded list exactly; w > 0 equals round five's stem field
    (``lexical_stems`` ``light:extra:w``; its document lengths double with the average, so
    BM25's length ratio is today's) up to the 9th decimal of the scores."""
    lexical_fields.check(datas, lambda d: rebuild(d, QueryStems("light", 0.0)))
    for w in weights:
        worst, moved, lists = 0.0, 0, 0
        for data in datas.values():
            ours = rebuild(data, QueryStems("light", w))["lexical"]
            field = lexical_stems.rebuild(data, lexical_stems.Analysis("light", "extra", w))
            for key, (hits, total) in field["lexical"].items():
                mine, my_total = ours[key]
                lists += 1
                moved += [h.chunk.id for h in hits] != [h.chunk.id for h in mine] or (
                    total != my_total
                )
                worst = max(
                    [worst, *(abs(a.score - b.score) for a, b in zip(hits, mine, strict=False))]
                )
        print(
            f"w={w:g}: {moved} of {lists} lists differ from the stem field; "
            f"largest score difference {worst:.2e}",
            flush=True,
        )


def _score(datas: dict[str, dict[str, Any]], name: str, modes: tuple[str, ...]) -> dict[str, Any]:
    qs = QueryStems.parse(name)
    rebuilt = {g: rebuild(data, qs) for g, data in datas.items()}
    r: dict[str, Any] = asyncio.run(lexical_fields.evaluate(rebuilt, modes))
    r["read"] = {g: (d["read"], d["summed"]) for g, d in rebuilt.items()}
    return r


def _cv(
    names: list[str], scores: dict[str, np.ndarray], groups: list[str], rows: list[int]
) -> dict[str, Any]:
    return lexical_stems.cross_validate_named(
        [names[i] for i in rows], {m: scores[m][rows] for m in MODES}, groups
    )


def combine(paths: list[str], stemmers: list[str]) -> dict[str, Any]:
    """Lexical mode only, cross-validated over the variants of several reports at once (say
    both ``--df`` rules: the rule is then chosen by the folds too), from their per-group
    figures (rounded to 4 decimals), the variants of ``stemmers``; semantic mode, alike in every variant, is left out."""
    reports = [json.loads(Path(f).read_text()) for f in paths]
    groups = reports[0]["groups"]
    names = ["none"] + [
        n for r in reports for n in r["variants"] if n != "none" and n.split(":")[0] in stemmers
    ]
    rows = {n: r["by_variant_and_group"][n] for r in reports for n in r["variants"]}
    base = rows["none"]["hybrid"]
    scores = {
        "hybrid": np.array([[base[g] for g in groups] for _ in names]),
        "lexical": np.array([[rows[n]["lexical"][g] for g in groups] for n in names]),
        "semantic": np.zeros((len(names), len(groups))),
    }
    cv = lexical_stems.cross_validate_named(names, scores, groups)
    for key in ("held_out", "fitted_in_sample", "base_in_sample"):
        cv[key].pop("semantic")
    cv["held_out_by_group"].pop("semantic")
    return {"reports": paths, "stemmers": stemmers, "lexical_mode_only": cv}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--stemmers", default="light,light+,snowball")
    p.add_argument("--weights", default="0.25,0.5,0.75,1,1.25,1.5")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--df", default="union", choices=("union", "sum"))
    p.add_argument("--check", action="store_true")
    p.add_argument("--combine", default=None, help="reports to cross-validate together (a,b)")
    p.add_argument("--cost", default=None, help="time these variants (none,light+:1.25,...)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    if args.combine:
        emit(combine(args.combine.split(","), args.stemmers.split(",")), args.out)
        return
    if args.check:
        check(replay_store.load_recordings(args.dir), weights)
        return
    if args.cost:
        emit(cost(replay_store.load_recordings(args.dir), args.cost.split(",")), args.out)
        return
    stemmers = args.stemmers.split(",")
    suffix = ":sum" if args.df == "sum" else ""
    names = ["none"] + [f"{s}:{w:g}{suffix}" for s in stemmers for w in weights]
    results = lexical_stems.score_variants(args.dir, names, args.workers, _score)
    groups = sorted(results[0]["hybrid"])
    scores = fit_ranker.group_scores(results)
    # Lexical mode only: each variant's lexical scores beside today's hybrid and semantic.
    lex_only = {m: scores[m].copy() for m in MODES}
    lex_only["hybrid"][:] = scores["hybrid"][0]
    every = list(range(len(names)))
    report: dict[str, Any] = {
        "groups": groups,
        "variants": names,
        # Mean postings a search reads / sums, by eval (repositories: the mean of their means).
        "postings_read_and_summed_per_search": {
            n: {
                "repo": [
                    round(float(np.mean([r["read"][g][k] for g in groups if g[0] != "@"])), 1)
                    for k in (0, 1)
                ],
                "cosqa": [round(v, 1) for v in r["read"]["@cosqa"]],
                "own": [round(v, 1) for v in r["read"]["@own"]],
            }
            for n, r in zip(names, results, strict=True)
        },
        "by_variant": lexical_stems.summaries(names, scores, groups),
        "by_variant_and_group": lexical_stems.by_group(
            names, scores, groups, ("hybrid", "lexical")
        ),
        "every_mode": _cv(names, scores, groups, every),
        "lexical_mode_only": _cv(names, lex_only, groups, every),
        "lexical_mode_only_by_stemmer": {
            s: _cv(
                names,
                lex_only,
                groups,
                [0, *(i for i, n in enumerate(names) if n.startswith(s + ":"))],
            )
            for s in stemmers
        },
    }
    for n in names:
        print(
            n,
            json.dumps(report["by_variant"][n]),
            report["postings_read_and_summed_per_search"][n],
            flush=True,
        )
    emit(report, args.out)


# Words code writes short and long, each entry one meaning (analysed forms: lower case, the
# light plural stemmer's). Round two added them to the query at full weight (not kept).
ABBREVIATIONS = [
    "cfg conf config configuration",
    "ctx context",
    "err error",
    "req request",
    "res resp response",
    "msg message",
    "auth authentication authorization authorize authenticate",
    "db database",
    "dir directory",
    "env environment",
    "arg argument",
    "param parameter",
    "init initialize initialization",
    "impl implementation implement",
    "repo repository",
    "str string",
    "num number",
    "len length",
    "idx index",
    "val value",
    "var variable",
    "tmp temp temporary",
    "fn func function",
    "obj object",
    "pkg package",
    "lib library",
    "util utility",
    "spec specification",
    "doc document documentation",
    "info information",
    "async asynchronous",
    "sync synchronous synchronize",
    "exec execute execution",
    "proc process",
    "mem memory",
    "buf buffer",
    "ptr pointer",
    "attr attribute",
    "prop property",
    "evt event",
    "cb callback",
    "iter iterator iterate",
    "col column",
    "addr address",
    "conn connection connect",
    "cmd command",
    "src source",
    "dst dest destination",
    "ref reference",
    "tx transaction",
    "pos position",
    "max maximum",
    "min minimum",
]


def _abbreviation_table() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for entry in ABBREVIATIONS:
        words = tuple(dict.fromkeys(t for w in entry.split() for t in lexical.analyse(w)))
        for w in words:
            out[w] = words
    return out


_TABLE = _abbreviation_table()


def _with_abbreviations(groups: list[tuple[str, ...]], on: bool) -> list[tuple[str, ...]]:
    """``groups``, each with the entries of ``ABBREVIATIONS`` its forms belong to (``on``)."""
    if not on:
        return groups
    return [
        tuple(dict.fromkeys([*forms, *(w for f in forms for w in _TABLE.get(f, ()))]))
        for forms in groups
    ]


if __name__ == "__main__":
    main()
