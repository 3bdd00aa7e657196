"""Stemming the BM25 terms, measured by rebuilding the recorded lexical lists (issue 36,
round five).

Questions are prose ("where are redirects followed", "how cookies are persisted"); code says
``follow_redirects``, ``persist``, ``handler``. The analyser already folds plurals (its
S-stemmer); this script measures folding more of a word's forms, two ways:

- ``replace``: every term of a chunk's BM25 document and of the query replaced by its stem;
- ``extra``: the stems as one more field beside the exact terms, each stem a term of its own
  (``~stem``) whose BM25 the query counts ``weight`` times (an exact match then scores its
  term and its stem; another form of the word its stem only);

with three stemmers over the analyser's terms: ``light`` (``light_stem``: -ing, -ed, -er and
a final -e, a doubled consonant undone, a final -y as -i, repeated until nothing changes),
``light+`` (also -ation, -ion and -at), and Snowball English (``snowballstemmer``, a
dependency of the project since issue 36's round nine). ``extra`` with weight 0 asks for the exact terms only, over an index that
holds the stems too: what a search that leaves stems out (say, hybrid mode's) would score.

The lists are rebuilt as ``bench.lexical_fields`` rebuilds them (the memory store's BM25 over
every chunk of the recording, today's ``FIELDS``; ``--check``: with today's analysis, the
recorded lists exactly), each analysis scored through the real
``SearchService`` with the default ranking (the query's own terms, the ranking's path words
and names, are untouched: only BM25 sees stems), then cross-validated by leaving one of the
18 groups out (``bench.fit_ranker.cross_validate``: admissible only if no eval block is below
today's in hybrid or lexical mode).

    python -m bench.lexical_stems --dir DIR --check        # today's analysis reproduces the lists
    python -m bench.lexical_stems --dir DIR [--variants none,light:replace,...] [--workers 2]
        [--out FILE]
    python -m bench.lexical_stems --dir DIR --cost         # document_terms us/chunk, best of 5
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench import fit_ranker, lexical_fields, replay_store
from bench.retrieval import emit
from codebase_mcp_search.core import lexical

MODES = ("hybrid", "lexical", "semantic")
STEM_PREFIX = "~"
_VOWELS = frozenset("aeiouy")


def _stem_ok(rest: str) -> bool:
    return len(rest) >= 3 and not _VOWELS.isdisjoint(rest)


def _undouble(word: str) -> str:
    # mapp(ing) -> map, sett(er) -> set; a doubled l, s or z is the word's own (call, pass).
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
        return word[:-1]
    return word


def _light_step(term: str) -> str:
    if len(term) < 4 or not term.isalpha():
        return term
    for end in ("ing", "ed"):
        if term.endswith(end) and _stem_ok(term[: -len(end)]):
            term = _undouble(term[: -len(end)])
            break
    if term.endswith("er") and _stem_ok(term[:-2]):
        term = _undouble(term[:-2])
    if term.endswith("e") and _stem_ok(term[:-1]):
        term = term[:-1]
    elif term.endswith("y") and term[-2] not in _VOWELS:
        term = term[:-1] + "i"
    return term


def light_stem(term: str) -> str:
    """A light stemmer over the analyser's (already plural-folded) terms: one of -ing / -ed,
    then -er, then a final -e, each only when three letters with a vowel remain, a doubled
    consonant undone, a final -y after a consonant as -i (``parse``, ``parser``,
    ``parsing``, ``parsed`` -> ``pars``; ``cookie``, the analyser's ``cooky`` -> ``cooki``),
    repeated until nothing changes (a stem is its own stem). Digits and words of fewer than
    four letters are kept."""
    while (shorter := _light_step(term)) != term:
        term = shorter
    return term


def light_plus_stem(term: str) -> str:
    """``light_stem``, then one of -ation, -ion, -at (``validation``, ``validate``,
    ``validated`` -> ``valid``)."""
    term = light_stem(term)
    if not term.isalpha():
        return term
    for end in ("ation", "ion", "at"):
        if term.endswith(end) and _stem_ok(term[: -len(end)]):
            return term[: -len(end)]
    return term


def _snowball() -> Callable[[str], str]:
    import snowballstemmer  # type: ignore[import-not-found]

    stem: Callable[[str], str] = snowballstemmer.stemmer("english").stemWord

    def snowball(term: str) -> str:
        return stem(term) if term.isalpha() else term

    return snowball


STEMMERS: dict[str, Callable[[], Callable[[str], str]]] = {
    "light": lambda: light_stem,
    "light+": lambda: light_plus_stem,
    "snowball": _snowball,
}


def memo(stem: Callable[[str], str]) -> Callable[[str], str]:
    """``stem`` remembering each term's stem (a recording asks for the same terms often)."""
    cache: dict[str, str] = {}

    def remembered(term: str) -> str:
        s = cache.get(term)
        if s is None:
            s = cache[term] = stem(term)
        return s

    return remembered


@dataclass(frozen=True)
class Analysis:
    """How BM25 sees a chunk's and a query's terms. ``stemmer`` None: today's analysis."""

    stemmer: str | None = None
    how: str = "replace"  # "replace" or "extra"
    weight: float = 1.0  # the stem field's weight in the query ("extra" only)

    @property
    def name(self) -> str:
        if self.stemmer is None:
            return "none"
        return f"{self.stemmer}:{self.how}" + (f":{self.weight:g}" if self.how == "extra" else "")

    @staticmethod
    def parse(text: str) -> Analysis:
        if text == "none":
            return Analysis()
        stemmer, how, *w = text.split(":")
        return Analysis(stemmer, how, float(w[0]) if w else 1.0)

    @functools.cached_property
    def _stem(self) -> Callable[[str], str]:
        assert self.stemmer is not None
        return memo(STEMMERS[self.stemmer]())

    def document(self, content: str, file_path: str, symbol: str | None) -> Counter[str]:
        counts = lexical.document_terms(content, file_path, symbol, lexical.FIELDS)
        if self.stemmer is None:
            return counts
        stem = self._stem
        stems: Counter[str] = Counter()
        for t, tf in counts.items():
            stems[stem(t) if self.how == "replace" else STEM_PREFIX + stem(t)] += tf
        if self.how == "replace":
            return stems
        counts.update(stems)
        return counts

    def query(self, terms: tuple[str, ...]) -> dict[str, float]:
        """The BM25 terms of a query's terms and each one's weight."""
        if self.stemmer is None:
            return dict.fromkeys(terms, 1.0)
        stem = self._stem
        if self.how == "replace":
            return dict.fromkeys((stem(t) for t in terms), 1.0)
        out = dict.fromkeys(terms, 1.0)
        if self.weight > 0:  # 0: the exact terms only, over an index holding the stems too
            for t in terms:
                out.setdefault(STEM_PREFIX + stem(t), self.weight)
        return out


def rebuild(data: dict[str, Any], analysis: Analysis) -> dict[str, Any]:
    """``data`` (a recording) with every lexical list recomputed under ``analysis``, to the
    recorded depth (``InMemoryChunkStore.lexical_search``'s BM25, a term's score times its
    weight in the query, the bound likewise)."""
    postings, doc_len, by_id = lexical_fields.index_of(
        data["chunks"], lambda c: analysis.document(c.content, c.file_path, c.symbol)
    )
    n = len(doc_len)
    avg = sum(doc_len.values()) / n
    lists = {}
    for key in data["lexical"]:
        terms, filters = key
        weights = analysis.query(terms)
        idfs = {
            t: lexical.idf(n, len(postings[t])) * w for t, w in weights.items() if t in postings
        }
        raw = lexical_fields.sums(idfs, postings, doc_len, avg)
        bound = lexical.upper_bound(idfs.values())
        lists[key] = lexical_fields.ranked(raw, bound, by_id, filters)
    return {**data, "lexical": lists}


def check(datas: dict[str, dict[str, Any]]) -> None:
    """Today's analysis rebuilds every recorded list exactly (ids and scores)."""
    lexical_fields.check(datas, lambda d: rebuild(d, Analysis()))


# A variant's figures from the recordings (group -> recording), its name and the modes to score.
Score = Callable[[dict[str, dict[str, Any]], str, tuple[str, ...]], dict[str, Any]]

_DATAS: dict[str, dict[str, Any]] = {}


def _init(directory: str) -> None:
    _DATAS.update(replay_store.load_recordings(directory))


def _run(score: Score, job: tuple[str, tuple[str, ...]]) -> tuple[str, dict[str, Any]]:
    name, modes = job
    started = time.perf_counter()
    r = score(_DATAS, name, modes)
    print(f"  scored {name} ({time.perf_counter() - started:.0f} s)", flush=True)
    return name, r


def score_variants(
    directory: str, names: list[str], workers: int, score: Score
) -> list[dict[str, Any]]:
    """``score`` of each variant of ``names`` over ``directory``'s recordings, in ``workers``
    processes (each loads the recordings once). The first, the base, is scored in every mode,
    the others in hybrid and lexical mode only: semantic mode reads no lexical list when every
    chunk holds a vector, so the base's semantic figures stand for every variant."""
    jobs = [(n, MODES if i == 0 else ("hybrid", "lexical")) for i, n in enumerate(names)]
    with multiprocessing.get_context("fork").Pool(
        workers, initializer=_init, initargs=(directory,)
    ) as pool:
        done = dict(pool.imap_unordered(functools.partial(_run, score), jobs))
    results = [done[n] for n in names]
    for r in results[1:]:
        r["semantic"] = results[0]["semantic"]
    return results


def summaries(names: list[str], scores: dict[str, np.ndarray], groups: list[str]) -> dict[str, Any]:
    """Each variant's three evals per mode (``fit_ranker.summary``; ``scores``: a row a
    variant of ``names``)."""
    return {
        n: fit_ranker.summary(groups, {m: scores[m][i] for m in MODES}) for i, n in enumerate(names)
    }


def by_group(
    names: list[str],
    scores: dict[str, np.ndarray],
    groups: list[str],
    modes: tuple[str, ...] = MODES,
) -> dict[str, Any]:
    """Each variant's figure per group in ``modes``, rounded as the reports round."""
    return {
        n: {m: {g: round(float(scores[m][i][j]), 4) for j, g in enumerate(groups)} for m in modes}
        for i, n in enumerate(names)
    }


def _score(datas: dict[str, dict[str, Any]], name: str, modes: tuple[str, ...]) -> dict[str, Any]:
    analysis = Analysis.parse(name)
    rebuilt = {g: rebuild(data, analysis) for g, data in datas.items()}
    return asyncio.run(lexical_fields.evaluate(rebuilt, modes))


def cost(datas: dict[str, dict[str, Any]], names: list[str], rounds: int = 5) -> dict[str, Any]:
    """``Analysis.document`` (``document_terms`` and the stemming) in us a chunk over the
    repositories' chunks, best of ``rounds``, the analyses by turns; the analyser's caches
    emptied before each pass, as a fresh indexing process starts."""
    chunks = [c for g, d in datas.items() if not g.startswith("@") for c in d["chunks"]]
    analyses = [Analysis.parse(n) for n in names]
    best = dict.fromkeys(names, float("inf"))
    for _ in range(rounds):
        for name, a in zip(names, analyses, strict=True):
            lexical._WORD_CACHE.clear()
            lexical.analysed.cache_clear()
            if a.stemmer is not None:
                a.__dict__.pop("_stem", None)
            document = a.document
            started = time.perf_counter()
            for c in chunks:
                document(c.content, c.file_path, c.symbol)
            best[name] = min(best[name], time.perf_counter() - started)
    # Postings (distinct terms of a chunk) a chunk writes, the index's size.
    postings = {
        n: round(
            sum(len(a.document(c.content, c.file_path, c.symbol)) for c in chunks) / len(chunks), 1
        )
        for n, a in zip(names, analyses, strict=True)
    }
    return {
        "us_per_chunk": {n: round(best[n] / len(chunks) * 1e6, 1) for n in names},
        "postings_per_chunk": postings,
        "chunks": len(chunks),
    }


def lexical_mode_only(
    names: list[str], scores: dict[str, np.ndarray], groups: list[str]
) -> dict[str, Any]:
    """The stems as an extra field, asked for in lexical mode only: hybrid and semantic mode
    ask for the exact terms, which over an index holding the stems too score as today's
    (``extra`` with weight 0 reproduces today's figures: the stems double every document's
    length and the average alike). Each ``extra`` variant's lexical scores with the base's
    hybrid and semantic ones, cross-validated as the analyses are."""
    rows = [0] + [i for i, n in enumerate(names) if ":extra:" in n and not n.endswith(":0")]
    split = {m: np.array([scores[m][i if m == "lexical" else 0] for i in rows]) for m in MODES}
    return cross_validate_named([names[i] for i in rows], split, groups)


def cross_validate_named(
    names: list[str], scores: dict[str, Any], groups: list[str]
) -> dict[str, Any]:
    """``fit_ranker.cross_validate`` over the analyses ``names`` (rows of ``scores``), each
    fold's choice and the fit named, with which are admissible in sample."""
    configs: list[dict[str, float | None]] = [{"analysis": i} for i in range(len(names))]
    allowed = {g: np.ones(len(names), dtype=bool) for g in [*groups, "*"]}
    cv = fit_ranker.cross_validate(configs, scores, groups, allowed)
    cv["chosen_by_fold"] = {
        g: names[int(c["analysis"] or 0)] for g, c in cv["chosen_by_fold"].items()
    }
    cv["fitted"] = names[int(cv["fitted"]["analysis"] or 0)]
    ok = fit_ranker.admissible(scores, groups, np.ones(len(groups), dtype=bool))
    return {"admissible_in_sample": {n: bool(ok[i]) for i, n in enumerate(names)}, **cv}


DEFAULT_VARIANTS = (
    "none,light:replace,light+:replace,snowball:replace,light:extra:0,snowball:extra:0,"
    "light:extra:0.25,light:extra:0.5,light:extra:1,light:extra:2,"
    "snowball:extra:0.25,snowball:extra:0.5,snowball:extra:1,snowball:extra:2"
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--variants", default=DEFAULT_VARIANTS)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--check", action="store_true", help="only check today's lists reproduce")
    p.add_argument("--cost", action="store_true", help="only time each analysis per chunk")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    names = args.variants.split(",")
    if names[0] != "none":
        raise SystemExit("the first variant is the base: none")
    if args.check:
        check(replay_store.load_recordings(args.dir))
        return
    if args.cost:
        print(json.dumps(cost(replay_store.load_recordings(args.dir), names)))
        return
    results = score_variants(args.dir, names, args.workers, _score)
    groups = sorted(results[0]["hybrid"])
    scores = fit_ranker.group_scores(results)
    cv = cross_validate_named(names, scores, groups)
    report = {
        "groups": groups,
        "analyses": names,
        "by_analysis": summaries(names, scores, groups),
        "by_analysis_and_group": by_group(names, scores, groups),
        **cv,
    }
    report["lexical_mode_only"] = lexical_mode_only(names, scores, groups)
    for n in names:
        print(n, json.dumps(report["by_analysis"][n]), flush=True)
    emit(report, args.out)


if __name__ == "__main__":
    main()
