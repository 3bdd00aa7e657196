"""A question's grammatical form (issue 36, round seven), fixed before any score was seen.

Round six found that the import graph's whole-repository prior pays on questions about how a
part works and costs questions asking for one function. This module sorts a query by its
form alone, from English grammar, not from any benchmark's labels or vocabulary; round seven
(``bench.gate``) gates evidence that favours whole files on the **mechanism** class.

The rule (words: the lower-cased runs of letters and digits of the query; the first ``how``
of the query decides, wherever it stands, so an embedded clause counts as a direct one):

- **symbol**: one identifier (``core.ranking.analyse_query``'s rule): a name to look up.
- **recipe**: ``how`` followed by ``to`` (an infinitive: "how to parse json", "python how to
  ..."), or by an asker as its subject, directly or after one auxiliary ("how do I", "how can
  we", "how should one", "how you can"): the asker's own action, a procedure, is asked for.
- **degree**: ``how`` followed by a gradable word ("how many", "how much", "how long", "how
  often", "how well"...): ``how`` modifies an adjective or adverb and asks for an amount.
- **mechanism**: any other ``how`` (manner or means, with the system as the subject: "how
  does X handle Y", "how are routes matched", "how the parser recovers", "explain how X
  works"), ``why`` (a reason: "why does X retry"), ``how come``, or ``what`` + ``happen``
  ("what happens when a client disconnects"): the question asks how a part of the system
  works, which an explanation of the process answers, not the location of one action.
- **question**: another interrogative (``what``, ``where``, ``which``, ``who``, ``when``,
  ``whose``, or an auxiliary first: "is there", "does X support"): asks to identify or locate
  a thing.
- **description**: none of the above: a noun phrase or an imperative describing one thing
  or action ("compute the hash of a file", "function that parses dates", "JSON parser and
  tokenizer").

A second rule, written down at the same time and reported beside the first, **mechanism+**:
mechanism, or a question or description whose words hold a noun naming how many parts are
organised (``NOMINAL``: architecture, lifecycle, flow, pipeline, ...). That is vocabulary,
not grammar (a nominalised process as the question's head), which is why it is the second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from codebase_mcp_search.core.ranking import analyse_query

CLASSES: Final = ("symbol", "mechanism", "recipe", "degree", "question", "description")

_WORD = re.compile(r"[a-z0-9]+")
# The asker as a subject: the question asks for a procedure the asker follows.
ASKERS: Final = frozenset({"i", "we", "you", "u", "one", "me", "ya"})
AUXILIARIES: Final = frozenset(
    {
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "is",
        "are",
        "am",
        "was",
        "were",
        "has",
        "have",
        "had",
    }
)
# Gradable words ``how`` modifies in a question of degree (an amount, a size, a frequency).
GRADABLE: Final = frozenset(
    {
        "many",
        "much",
        "long",
        "often",
        "far",
        "big",
        "large",
        "small",
        "fast",
        "slow",
        "old",
        "few",
        "frequently",
        "quickly",
        "deep",
        "wide",
        "high",
        "low",
        "soon",
        "well",
        "expensive",
        "costly",
    }
)
INTERROGATIVES: Final = frozenset({"what", "where", "which", "who", "whom", "whose", "when"})
# Nouns that name how many parts are organised or work in sequence (``mechanism+`` only).
NOMINAL: Final = frozenset(
    {
        "architecture",
        "lifecycle",
        "flow",
        "pipeline",
        "mechanism",
        "internals",
        "workflow",
        "overview",
        "subsystem",
        "orchestration",
    }
)


def words(text: str) -> list[str]:
    """The query's lower-cased runs of letters and digits, in order."""
    return _WORD.findall(text.lower())


def _after_how(ws: Sequence[str], i: int) -> str:
    nxt = ws[i + 1] if i + 1 < len(ws) else ""
    if nxt == "to":
        return "recipe"
    if nxt in GRADABLE:
        return "degree"
    after = ws[i + 2] if i + 2 < len(ws) else ""
    if nxt in ASKERS or (nxt in AUXILIARIES and after in ASKERS):
        return "recipe"
    return "mechanism"


def question_form(text: str) -> str:
    """The form of ``text``: one of ``CLASSES`` (see the module docstring)."""
    if analyse_query(text).is_symbol:
        return "symbol"
    ws = words(text)
    if "how" in ws:
        return _after_how(ws, ws.index("how"))
    if "why" in ws:
        return "mechanism"
    for i, w in enumerate(ws):
        if w == "what" and any(x.startswith("happen") for x in ws[i + 1 : i + 3]):
            return "mechanism"
    if ws and (ws[0] in INTERROGATIVES or ws[0] in AUXILIARIES):
        return "question"
    if any(w in INTERROGATIVES for w in ws[:3]):
        return "question"
    return "description"


def is_mechanism(text: str, nominal: bool = False) -> bool:
    """Whether ``text`` asks how a part works (``nominal``: the ``mechanism+`` rule)."""
    form = question_form(text)
    if form == "mechanism":
        return True
    return nominal and form in ("question", "description") and not NOMINAL.isdisjoint(words(text))
