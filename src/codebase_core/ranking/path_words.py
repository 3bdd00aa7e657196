"""How a question's words meet file paths (step 3 of ``rerank``): a word found in a file's
name or folder (``path_share``, weighed by how few candidate paths hold it), and a file named
after a word of the question (``stem_gains``). Words are compared without a form-changing
ending (``parsing``/``parser``); the lexical index keeps its terms as they are."""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models.text import path_in_directory
from codebase_mcp_search.core.ranking import naming, paths
from codebase_mcp_search.core.ranking.config import RankingConfig
from codebase_mcp_search.core.ranking.query import QueryProfile

# Word endings that change a word's form, not its subject (``parsing``/``parser``,
# ``serialization``/``serializer``), for comparing query words with path words only: the
# lexical index keeps its terms as they are.
_ENDINGS = (
    "izations", "ization", "isation", "ations", "ation", "izers", "izer", "izes", "ize",
    "ings", "ing", "ions", "ion", "ers", "er", "ors", "or", "ed", "es", "s",
)  # fmt: skip


@functools.lru_cache(maxsize=16_384)
def stem(word: str) -> str:
    """``word`` without one form-changing ending, keeping at least three letters."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


@functools.lru_cache(maxsize=65_536)
def _words_match(word: str, part: str) -> bool:
    if word == part:
        return True
    a, b = stem(word), stem(part)
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 3 and long_.startswith(short)


def _path_query_words(profile: QueryProfile) -> list[str]:
    return [t for t in profile.terms if len(t) >= 3]


def question_words(profile: QueryProfile) -> int:
    """The question's words of three letters or more (its lexical terms)."""
    return len(_path_query_words(profile))


def files_path_matches(profile: QueryProfile, files: Collection[str]) -> dict[str, frozenset[str]]:
    """For each of ``files``, the query's words (of three letters or more) found in its name
    or the folder holding it: exactly, or one a prefix of the other without their endings.
    Each query word is compared once with each distinct path word among the files that begins
    alike, then each file's words looked up (a search's candidates share most of their folders
    and words)."""
    parts = {f: _path_words(f) for f in files}
    # Words that match share their first three letters (a query word has three or more, and
    # a match is one word, or a prefix of three letters or more of it without its ending),
    # so each query word is compared with the path words that begin alike only.
    by_head: dict[str, list[str]] = defaultdict(list)
    for p in frozenset().union(*parts.values()):
        by_head[p[:3]].append(p)
    matching = [
        (t, m)
        for t in _path_query_words(profile)
        if (m := frozenset(p for p in by_head.get(t[:3], ()) if _words_match(t, p)))
    ]
    return {f: frozenset(t for t, m in matching if not m.isdisjoint(ps)) for f, ps in parts.items()}


def path_share(
    profile: QueryProfile,
    path: str,
    weights: Mapping[str, float] | None = None,
    matches: frozenset[str] | None = None,
) -> float:
    """The share of the query's words (of three letters or more) found in the file's name or
    the folder holding it, each counted by its weight in ``weights`` (1.0 when absent).
    ``matches``: the file's ``files_path_matches``, when the caller has them."""
    found = files_path_matches(profile, [path])[path] if matches is None else matches
    return path_shares(profile, weights or {}, {path: found})[path]


def path_shares(
    profile: QueryProfile, weights: Mapping[str, float], matches: Mapping[str, frozenset[str]]
) -> dict[str, float]:
    """``path_share`` of each file of ``matches`` (its ``files_path_matches``), the query's
    words and their total weight taken once for all."""
    words = _path_query_words(profile)
    total = sum(weights.get(t, 1.0) for t in words)
    if total <= 0:
        return dict.fromkeys(matches, 0.0)
    return {
        f: sum(weights.get(t, 1.0) for t in words if t in found) / total
        for f, found in matches.items()
    }


def path_word_weights(
    profile: QueryProfile,
    files: Collection[str],
    floor: float,
    matches: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, float]:
    """Each query word's weight in ``path_share``: ``floor`` plus the rest times its inverse
    document frequency among the paths of ``files`` (the candidates' files), scaled to [0, 1]:
    1 for a word in one path (or none), ``log 2 / log(1 + n)`` for a word in all ``n``. A word
    that names most candidates (the library's own name, its main subject) tells them apart
    less than one that names a few. ``matches``: ``files_path_matches``, when the caller has
    them."""
    n = len(files)
    weights: dict[str, float] = {}
    if floor >= 1.0 or n < 2:
        return weights
    found = matches if matches is not None else files_path_matches(profile, files)
    for word in _path_query_words(profile):
        weights[word] = _word_weight(n, sum(1 for f in files if word in found[f]), floor)
    return weights


def _word_weight(n: int, df: int, floor: float) -> float:
    """A word's weight in ``path_share`` when ``df`` of ``n`` paths hold it."""
    idf = math.log1p(n / df) / math.log1p(n) if df else 1.0
    return floor + (1.0 - floor) * idf


# Directories whose files a ``PathIndex`` keeps (a search filtered by one scans every path).
_DIRECTORIES_KEPT = 32


@dataclass(frozen=True, slots=True)
class PathIndex:
    """The words of a repository's file paths, to find the files a question names among all
    of them (``path_files``), not only among a search's candidates."""

    files: tuple[str, ...]
    words: Mapping[str, tuple[int, ...]]
    """Each path word, with the indexes in ``files`` of the paths holding it."""
    heads: Mapping[str, tuple[str, ...]]
    """Path words by their first three letters (words that match share them)."""
    within: dict[str, frozenset[int]] = field(default_factory=dict, compare=False, repr=False)
    """The files in each directory a search filtered by, kept (a few): one scan each."""

    @classmethod
    def of(cls, files: Iterable[str]) -> PathIndex:
        ordered = tuple(sorted(set(files)))
        words: dict[str, list[int]] = defaultdict(list)
        for i, f in enumerate(ordered):
            for w in _path_words(f):
                words[w].append(i)
        heads: dict[str, list[str]] = defaultdict(list)
        for w in words:
            heads[w[:3]].append(w)
        return cls(
            ordered,
            {w: tuple(ix) for w, ix in words.items()},
            {h: tuple(ws) for h, ws in heads.items()},
        )

    def shares(
        self, profile: QueryProfile, floor: float, directory: str | None = None
    ) -> dict[str, float]:
        """``path_shares`` of the files (those in ``directory`` if given) whose path holds a
        word of the question, each word weighed by ``path_word_weights`` over all those
        files: what the three functions give over every file, files of no word left out."""
        inside = self._inside(directory) if directory else None
        n = len(self.files) if inside is None else len(inside)
        words = _path_query_words(profile)
        found: dict[int, set[str]] = defaultdict(set)
        df: dict[str, int] = {}
        for t in dict.fromkeys(words):
            hit: set[int] = set()
            for p in self.heads.get(t[:3], ()):
                if _words_match(t, p):
                    hit.update(self.words[p])
            if inside is not None:
                hit &= inside
            df[t] = len(hit)
            for i in hit:
                found[i].add(t)
        weighed = floor < 1.0 and n >= 2
        weights = {t: _word_weight(n, df[t], floor) for t in df} if weighed else {}
        total = sum(weights.get(t, 1.0) for t in words)
        if total <= 0:
            return {}
        return {
            self.files[i]: sum(weights.get(t, 1.0) for t in words if t in ts) / total
            for i, ts in found.items()
        }

    def _inside(self, directory: str) -> frozenset[int]:
        kept = self.within.get(directory)
        if kept is None:
            if len(self.within) >= _DIRECTORIES_KEPT:
                self.within.clear()
            kept = frozenset(i for i, f in enumerate(self.files) if path_in_directory(f, directory))
            self.within[directory] = kept
        return kept


def query_word_forms(profile: QueryProfile) -> frozenset[str]:
    """The forms of the query's words a file stem is compared with: each word as typed
    (``from_json`` -> ``fromjson``), each lexical term, and each two words in a row
    (``thread pool`` -> ``threadpool``), without their endings."""
    forms: set[str] = set()
    for w in (*profile.tokens, *profile.terms):
        n = paths.normalise_name(w)
        if len(n) >= 3 and n not in lexical.STOP_WORDS:
            forms.add(stem(n))
    # Two words in a row name a file too: "thread pool" -> threadpool.c.
    words = [paths.normalise_name(t) for t in profile.tokens]
    for a, b in itertools.pairwise(words):
        if a and b and a not in lexical.STOP_WORDS and b not in lexical.STOP_WORDS:
            forms.add(stem(a + b))
    return frozenset(forms)


def named_after_query(forms: frozenset[str], path: str) -> bool:
    """Whether the file's whole stem is one of the query's words (``forms``)."""
    return any(stem(n) in forms for n in paths.stem_names(path))


def stem_boost_share(profile: QueryProfile, full_words: int) -> float:
    """How much of the stem boost a question gets: all of it up to ``full_words`` words of
    three letters or more, ``full_words / words`` beyond (a long question describes one
    function, and a file named after one of its words says less)."""
    if full_words <= 0:
        return 1.0
    return min(1.0, full_words / max(1, question_words(profile)))


def stem_gains(
    profile: QueryProfile, config: RankingConfig, files: Collection[str]
) -> dict[str, float]:
    """What the stem boost adds to each of ``files`` named after a word of the question
    (step 3 of the module docstring): by the word's position (``stem_boost_position``), or
    else by the question's length (``stem_boost_words``)."""
    if config.stem_boost_position <= 0 and config.stem_abbreviation <= 0:
        forms = query_word_forms(profile)
        full = config.stem_boost * stem_boost_share(profile, config.stem_boost_words)
        return {f: full for f in files if forms and named_after_query(forms, f)}
    single, pairs = naming.word_positions(profile, stem)
    by_length = stem_boost_share(profile, config.stem_boost_words)
    k = config.stem_boost_position
    find = naming.position_finder(single, pairs, config.stem_abbreviation)
    out: dict[str, float] = {}
    for f in files:
        at = find(_stem_forms(f))
        if at is not None:
            out[f] = config.stem_boost * (naming.position_share(at, k) if k > 0 else by_length)
    return out


@functools.lru_cache(maxsize=16_384)
def _path_words(path: str) -> frozenset[str]:
    return paths.path_terms(path)


@functools.lru_cache(maxsize=16_384)
def _stem_forms(path: str) -> frozenset[str]:
    """A file's stem names without their form-changing endings (compared with a question's
    words for every candidate file of every search)."""
    return frozenset(stem(n) for n in paths.stem_names(path))
