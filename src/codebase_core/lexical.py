"""Code-aware lexical analysis and BM25 scoring, shared by every ChunkStore adapter.

The analyser splits text on anything that is not a letter or digit, then splits identifiers
on snake_case, camelCase (``HTTPServer`` -> ``http``, ``server``) and letter/digit boundaries,
case-folds, drops one-character tokens and English stop words, and applies a light plural
stemmer. A multi-part identifier also yields itself whole (``getUserName`` -> ``get``,
``user``, ``name``, ``getusername``), so an exact identifier query ranks its definition first.

BM25 uses k1 = 1.2, b = 0.75 and the Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``.
A chunk's document is its content, its file path and its symbol name, and its documentation
comments once more, each field weighed as ``FIELDS`` says (``Fields``). Scores are reported
normalised to [0, 1] by the query's upper bound ``sum(idf(t) * (k1 + 1))``: the score a
document would reach holding every query term infinitely often at average length.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

K1 = 1.2
B = 0.75

# Words are the runs of ASCII letters and digits. They are found in the UTF-8 bytes with every
# other byte turned into a space: split() then yields the same words as ``[A-Za-z0-9]+`` at half
# the cost (every non-ASCII character encodes to bytes >= 0x80, surrogates included).
_SEPARATORS = bytes(b if chr(b).isascii() and chr(b).isalnum() else 0x20 for b in range(256))
# Boundaries inside an identifier: lower->Upper, UPPER->Upper+lower, letter<->digit.
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# English function words only: words such as "get", "set", "not" carry meaning in code.
STOP_WORDS = frozenset(
    "a an and are as at be by do does for from how i if in into is it its of on or so such "  # noqa: SIM905
    "that the their then there these this to was what when where which while who why will with".split()
)

# Names of programming languages, dropped from queries (see ``query_terms``); stemmed forms.
LANGUAGE_WORDS = frozenset(
    "python javascript typescript golang java rust ruby php kotlin swift scala bash csharp "  # noqa: SIM905
    "cpp".split()
)


def _stem(token: str) -> str:
    """A light plural stemmer (S-stemmer, Harman 1991): conservative, keeps code words intact."""
    if len(token) <= 3 or not token.endswith("s"):
        return token
    if token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


def _keep(token: str) -> bool:
    return len(token) > 1 and token not in STOP_WORDS


def _word_terms(word: str) -> tuple[str, ...]:
    parts = _PARTS.findall(word)
    terms: list[str] = []
    if len(parts) > 1:
        whole = word.lower()
        if _keep(whole):
            terms.append(_stem(whole))
    for part in parts:
        p = part.lower()
        if _keep(p):
            terms.append(_stem(p))
    return tuple(terms)


# Code repeats its words heavily, so the per-word expansion is memoised (a dict: cheaper per hit
# than lru_cache; emptied when full).
_WORD_CACHE: dict[bytes, tuple[str, ...]] = {}
_WORD_CACHE_SIZE = 131_072


def analyse(text: str) -> list[str]:
    """Terms of ``text`` in order, with repeats (for term frequencies)."""
    terms: list[str] = []
    extend = terms.extend
    cache = _WORD_CACHE
    for word in text.encode("utf-8", "surrogatepass").translate(_SEPARATORS).split():
        found = cache.get(word)
        if found is None:
            if len(cache) >= _WORD_CACHE_SIZE:
                cache.clear()
            found = cache[word] = _word_terms(word.decode("ascii"))
        extend(found)
    return terms


@functools.lru_cache(maxsize=4096)
def analysed(text: str) -> tuple[str, ...]:
    """``analyse(text)``, remembered for the last 4,096 texts: indexing analyses every chunk
    twice within a batch or two, for its vector (the hashing embedder) and for its postings."""
    return tuple(analyse(text))


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order, without programming-language names.

    "python read a file line by line" asks for code *in* Python: the word says which language,
    not what the code does, and matching it literally ranks comments such as "# Python 2
    compat" first (filter by language for that). A query made only of such words keeps them.
    """
    terms = list(dict.fromkeys(analyse(text)))
    content = [t for t in terms if t not in LANGUAGE_WORDS]
    return content or terms


@dataclass(frozen=True, slots=True)
class Fields:
    """How many times each part of a chunk counts in its BM25 document. A field's weight
    multiplies its terms' frequencies before BM25's saturation and length normalisation, as
    BM25F does with one length normalisation for all fields. The content counts once; its
    documentation comments (``doc_comments``) count ``doc`` times more."""

    path: int = 1
    symbol: int = 1
    doc: int = 0


# The fields of an index written by this version of the analyser: path and symbol twice, doc
# comments once more (fitted on the repository benchmark, CoSQA and the own eval, cross-
# validated by repository: bench/lexical_fields.py, bench/README.md "round four").
FIELDS = Fields(path=2, symbol=2, doc=1)
# The rules the postings of an index were derived by; a repository records the version its
# terms were written with, and an index run derives every file's terms again when it differs
# (``services.indexing.decisions.rechunk_all``). 1: content, path and symbol once each.
# 2: ``FIELDS``. 3: the same terms over new chunks (the chunker's rules changed: Elixir and Lua
# cut at their definitions, a doc comment over the budget packed by lines). 4: OCaml interfaces
# (``.mli``) and Erlang headers (``.hrl``) read by their grammars, OCaml class types named.
ANALYSER_VERSION = 4

# Documentation comments, by the syntaxes that mark a comment as documentation: docstrings
# (Python, Elixir's @doc), /** */ (Javadoc, KDoc, JSDoc, Scaladoc, Doxygen), /// and //!
# (Rust, Swift, C#, Dart, Zig, Doxygen), --- (LuaDoc), (** *) (OCamldoc, with the space after
# the opener its style writes: C's (**p) has none), {-| -}, -- | and -- ^ (Haddock), #'
# (roxygen) and %% @doc (EDoc). Plain comments are left out: they hold as much commented-out
# code, licence text and TODOs as prose. What ``doc_comments`` finds is
# what ``DOC_COMMENT.findall`` finds (a property test holds them equal): the scan below jumps
# from opener to closer with ``str.find``, where the expression tries its alternatives at
# every character (a third of a chunk's analysis when indexing).
DOC_COMMENT = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|/\*\*[\s\S]*?\*/|\(\*\* [\s\S]*?\*\)|\{-\|[\s\S]*?-\}'
    r"|(?:///|//!|---|-- \||-- \^|#'|%% @doc)[^\n]*"
)
_DOC_OPENER = re.compile(r'"""|\'\'\'|/\*\*|\(\*\* |\{-\||///|//!|---|-- \||-- \^|#\'|%% @doc')
# Where each opener's comment ends: its closer (kept), or the end of the line (not kept).
_DOC_CLOSER = {'"""': '"""', "'''": "'''", "/**": "*/", "(** ": "*)", "{-|": "-}"}
# Text that may open a documentation comment: most chunks hold none, and a substring test
# costs far less than a scan.
_DOC_OPENERS = (
    '"""',
    "'''",
    "/**",
    "(** ",
    "{-|",
    "///",
    "//!",
    "---",
    "-- |",
    "-- ^",
    "#'",
    "%% @doc",
)


def doc_comments(content: str) -> list[str]:
    """The documentation comments of ``content`` (see ``DOC_COMMENT``)."""
    if not any(opener in content for opener in _DOC_OPENERS):
        return []
    found: list[str] = []
    search = _DOC_OPENER.search
    find = content.find
    at = 0
    while (opener := search(content, at)) is not None:
        start = opener.start()
        closer = _DOC_CLOSER.get(opener.group())
        if closer is None:  # a line comment: to the end of its line
            end = find("\n", start)
            end = len(content) if end < 0 else end
            found.append(content[start:end])
            at = end
            continue
        end = find(closer, start + 3)
        if end < 0:  # never closed: no comment opens here (the expression moves on by one)
            at = start + 1
            continue
        at = end + len(closer)
        found.append(content[start:at])
    return found


def document_terms(
    content: str, file_path: str, symbol: str | None = None, fields: Fields = FIELDS
) -> Counter[str]:
    """Term frequencies of a chunk's BM25 document: its content, its file path and its
    symbol name (a definition's name says most about what it does), and its documentation
    comments once more, each as many times as ``fields`` says."""
    counts = Counter(analysed(content))
    # A file's chunks share its path, and a symbol recurs: their terms are remembered.
    if fields.path:
        counts.update(analysed(file_path) * fields.path)
    if symbol and fields.symbol:
        counts.update(analysed(symbol) * fields.symbol)
    if fields.doc:
        comments = doc_comments(content)
        if comments:
            counts.update(analyse(" ".join(comments)) * fields.doc)
    return counts


def idf(total_docs: int, doc_freq: int) -> float:
    return math.log(1.0 + (total_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def term_score(tf: int, doc_len: int, avg_len: float, term_idf: float) -> float:
    norm = K1 * (1.0 - B + B * (doc_len / avg_len if avg_len > 0 else 1.0))
    return term_idf * (tf * (K1 + 1.0)) / (tf + norm)


def upper_bound(idfs: Iterable[float]) -> float:
    return sum(i * (K1 + 1.0) for i in idfs)


def bm25(
    doc_tf: Mapping[str, int],
    doc_len: int,
    avg_len: float,
    idfs: Mapping[str, float],
) -> float:
    """Raw BM25 of one document for query terms with the given idfs."""
    return sum(term_score(doc_tf[t], doc_len, avg_len, w) for t, w in idfs.items() if doc_tf.get(t))


def normalised(raw: float, bound: float) -> float:
    """``raw / bound`` clamped to [0, 1] and rounded to 9 decimals, so that stores summing term
    scores in different orders report equal scores for tied documents (ties then fall to path
    and line in every store)."""
    if bound <= 0:
        return 0.0
    return round(min(1.0, max(0.0, raw / bound)), 9)
