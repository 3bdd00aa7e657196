"""The configurations ``bench.fit_ranker`` searches: the shipped weights (``BASE``), each
weight's grid (``SPACE``; ``--widen`` adds ``WIDE``), the pool drawn from them, and how one
configuration searches in a mode (``variant``).

Apart from ``bench.fit_ranker``, which scores and cross-validates them: a round changes the
space, seldom the fit.
"""

from __future__ import annotations

import json
import random

from bench.retrieval import Variant
from codebase_mcp_search.core.ranking import RankingConfig

# The shipped weights before the fit, the centre of the pool; ``fusion.`` ones are
# FusionConfig's. Round two (issue 36) started from the hand-tuned issue-19 weights (hollow
# prior 1.0, no named lexical weight); round three from round two's fit, adding the semantic
# list's abstention; round four from round three's fit (abstention 0.06), over recordings of
# the index with the fitted BM25 fields (bench/lexical_fields.py).
BASE: dict[str, float | None] = {
    "definition_boost": 1.5,
    "path_boost": 1.0,
    "stem_boost": 0.5,
    "coherence_boost": 0.2,
    "coherence_rest_share": 1.0,
    "reference_boost": 0.2,
    "hollow_prior": 0.5,
    "file_decay": 0.7,
    "fusion.lexical_weight": 0.5,
    "fusion.semantic_min_spread": 0.1,
    "fusion.best_share": 0.0,
    "fusion.semantic_abstain_spread": 0.06,
    "named_lexical_weight": 2.0,
}
SPACE: dict[str, tuple[float | None, ...]] = {
    "definition_boost": (1.0, 1.5, 2.0),
    "path_boost": (0.5, 0.75, 1.0, 1.25, 1.5),
    "stem_boost": (0.25, 0.5, 0.75),
    "coherence_boost": (0.1, 0.2, 0.3, 0.4),
    "coherence_rest_share": (0.25, 0.5, 1.0),
    "reference_boost": (0.1, 0.2, 0.3),
    "hollow_prior": (0.3, 0.5, 0.7, 1.0),
    "file_decay": (0.5, 0.6, 0.7, 0.8),
    "fusion.lexical_weight": (0.3, 0.5, 0.7),
    "fusion.semantic_min_spread": (0.1, 0.15, 0.2),
    "fusion.best_share": (0.0, 0.2, 0.4),
    "fusion.semantic_abstain_spread": (0.0, 0.03, 0.04, 0.05, 0.06, 0.07),
    "named_lexical_weight": (None, 1.0, 2.0, 3.0),
}
# ``--widen`` (round six): the path gains down to 0, and apart for the modes that use vectors.
WIDE: dict[str, tuple[float | None, ...]] = {
    "path_boost": (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5),
    "stem_boost": (0.0, 0.25, 0.5, 0.75),
    "vec.path_boost": (None, 0.0, 0.25, 0.5, 0.75),
    "vec.stem_boost": (None, 0.0, 0.25),
}
VECTOR_MODES = ("hybrid", "semantic")


def widen() -> None:
    """Round six's grid (``--widen``)."""
    SPACE.update(WIDE)
    BASE.update({k: None for k in WIDE if k not in BASE})


def lexical_only() -> None:
    """The grid of a fit of lexical mode alone (round ten): without the fusion's weights,
    which a search ranked by its lexical list never reads, and with round six's wider path
    gains (lexical mode's BM25 reads the path twice since round four, so the gains may weigh
    less there)."""
    for name in [k for k in SPACE if k.startswith("fusion.") or k == "named_lexical_weight"]:
        del SPACE[name]
        BASE.pop(name, None)
    SPACE.update({k: v for k, v in WIDE.items() if not k.startswith("vec.")})


def pool(n_random: int, seed: int) -> list[dict[str, float | None]]:
    """BASE, each weight moved alone over its grid, then ``n_random`` draws (no repeats)."""
    out = [dict(BASE)]
    for name, values in SPACE.items():
        for v in values:
            if v != BASE[name]:
                out.append({**BASE, name: v})
    rng = random.Random(seed)
    seen = {json.dumps(c, sort_keys=True) for c in out}
    wanted = len(out) + n_random
    while len(out) < wanted:
        c = {name: rng.choice(values) for name, values in SPACE.items()}
        name = json.dumps(c, sort_keys=True)
        if name not in seen:
            seen.add(name)
            out.append(c)
    return out


def key(config: dict[str, float | None]) -> str:
    """A configuration's name in the cache of scored ones (a weight left unset, None, is
    left out: a cache written before that weight existed still answers)."""
    return json.dumps({k: v for k, v in config.items() if v is not None}, sort_keys=True)


def variant(config: dict[str, float | None], mode: str = "hybrid") -> Variant:
    """The configuration as searched in ``mode`` (``vec.`` weights, when set, replace the
    shared ones in the modes that rank by vectors)."""
    fusion = {k[len("fusion.") :]: v for k, v in config.items() if k.startswith("fusion.")}
    ranking = {k: v for k, v in config.items() if "." not in k}
    if mode in VECTOR_MODES:
        for k, v in config.items():
            if k.startswith("vec.") and v is not None:
                ranking[k[len("vec.") :]] = v
    return Variant(RankingConfig(**ranking), fusion)
