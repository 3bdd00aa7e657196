"""Hybrid rank fusion of a semantic and a lexical result list.

Two methods, both weighted and both producing a score in [0, 1]:

- ``rrf`` (weighted reciprocal rank fusion): ``sum_i w_i / (k + rank_i)`` over the lists a chunk
  appears in (ranks from 1), divided by its maximum ``sum_i w_i / (k + 1)``, so a chunk ranked
  first by both lists scores 1.0.
- ``linear`` (convex combination of scores): ``(w_s * s + w_l * l) / (w_s + w_l)`` where ``s``
  is the semantic similarity in [0, 1] and ``l`` the normalised BM25 in [0, 1]; a chunk missing
  from a list contributes that list's lowest retrieved score (it ranked below all of them).
  With ``normalisation="minmax"`` each list's scores are first rescaled to [0, 1] over the
  candidates retrieved (best 1, worst 0), so the weights act on equal spreads, and a chunk
  missing from a list contributes 0. The semantic list is divided by at least
  ``semantic_min_spread``: when its candidates' cosines crowd into a narrow band (the model
  sees no clear answer), its best scores below 1 and the lexical list decides more. With
  ``best_share`` above 0, that share of a chunk's score is the better of its two rescaled
  scores instead of their weighted mean (0 by default: measured, not kept; bench/README.md).

A semantic list whose candidates all score within ``semantic_abstain_spread`` of each other,
over at least ``min_candidates`` of them, abstains (``abstains``): the model separates nothing
among them (a repository of hundreds of near-alike configuration files, a question in words the
model does not know), and its order would only reshuffle the lexical list's. Hybrid search then
ranks by the lexical list as it is, followed by the semantic list's other chunks
(``lexical_led``), so it ranks as lexical search does (the search service passes it lexical
mode's list, each word's other forms counted: ``core.stems``).

A chunk without a vector (its repository's semantic layer is still being built, or was never
built) cannot be in the semantic list; that is no evidence against it. Listed in
``unvectored``, it is scored by the lexical list alone, as the lexical list scores it
(``w_l * l / w_l``): with no vector anywhere, fusion ranks exactly as the lexical list does.

Ties are broken by file path, then start line, so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.models import Chunk, ScoredChunk

FusionMethod = Literal["rrf", "linear"]
FusionNormalisation = Literal["none", "minmax"]


class FusionConfig(BaseModel):
    """How hybrid search combines its two lists. The defaults (``core.defaults``)
    were tuned with all-MiniLM-L6-v2 on CoSQA and the own eval (``bench/tune_fusion.py``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: FusionMethod = defaults.FUSION_METHOD
    semantic_weight: float = Field(default=defaults.FUSION_SEMANTIC_WEIGHT, ge=0.0)
    lexical_weight: float = Field(default=defaults.FUSION_LEXICAL_WEIGHT, ge=0.0)
    rrf_k: int = Field(default=defaults.FUSION_RRF_K, ge=1)
    # linear only: "none" combines the scores as they are, "minmax" rescales each list first.
    normalisation: FusionNormalisation = defaults.FUSION_NORMALISATION
    # minmax only: the least spread the semantic scores are divided by, so a list whose
    # candidates score nearly alike (the model is unsure) is not stretched to [0, 1] and
    # weighs less against the lexical list. In the semantic score's units, ``(1 + cos) / 2``.
    semantic_min_spread: float = Field(default=defaults.FUSION_SEMANTIC_MIN_SPREAD, ge=0.0)
    # linear only: this share of a chunk's fused score is the better of its two (normalised)
    # scores instead of their weighted mean, so a chunk one list ranks first is not sunk by
    # the other list's missing it.
    best_share: float = Field(default=defaults.FUSION_BEST_SHARE, ge=0.0, le=1.0)
    # The least spread of the semantic candidates' scores (best minus worst, in the semantic
    # score's units) at which the semantic list is heard at all; below it, over at least
    # ``min_candidates`` candidates, it abstains (see the module doc). 0: always heard.
    semantic_abstain_spread: float = Field(
        default=defaults.FUSION_SEMANTIC_ABSTAIN_SPREAD, ge=0.0, le=1.0
    )
    min_candidates: int = Field(default=defaults.FUSION_ABSTAIN_MIN_CANDIDATES, ge=1)
    # How many candidates each list contributes, the same for every limit up to it: the
    # first answers of a search are then those of the same search with a smaller limit.
    candidates: int = Field(default=defaults.SEARCH_CANDIDATES, ge=1)

    def depth(self, limit: int) -> int:
        return max(limit, self.candidates)


def _minmax(scores: dict[str, float], min_spread: float = 0.0) -> dict[str, float]:
    """Scores rescaled to [0, 1]; a list whose scores are all equal gets 1 everywhere. The
    scores are divided by at least ``min_spread`` (the best then scores ``spread /
    min_spread`` when the spread is smaller)."""
    if not scores:
        return scores
    low, high = min(scores.values()), max(scores.values())
    if high <= low:
        return dict.fromkeys(scores, 1.0)
    spread = max(high - low, min_spread)
    return {cid: (v - low) / spread for cid, v in scores.items()}


def rescaled(ranked: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Scores min-max rescaled over the list (best 1, worst 0), order kept."""
    scores = _minmax({sc.chunk.id: sc.score for sc in ranked})
    return [ScoredChunk.of(sc.chunk, scores[sc.chunk.id]) for sc in ranked]


def fuse(
    semantic: Sequence[ScoredChunk],
    lexical: Sequence[ScoredChunk],
    config: FusionConfig,
    unvectored: Collection[str] = (),
) -> list[ScoredChunk]:
    """Fuse two ranked lists (semantic scores in [0, 1], lexical in [0, 1]) into one; the
    chunks of ``unvectored`` (ids) are scored by the lexical list alone (see the module doc)."""
    ws, wl = config.semantic_weight, config.lexical_weight
    total_w = ws + wl
    chunks: dict[str, Chunk] = {}
    scores: dict[str, float] = {}
    if total_w <= 0:
        return []
    if config.method == "rrf":
        k = config.rrf_k
        for weight, ranked in ((ws, semantic), (wl, lexical)):
            for rank, sc in enumerate(ranked, start=1):
                chunks[sc.chunk.id] = sc.chunk
                scores[sc.chunk.id] = scores.get(sc.chunk.id, 0.0) + weight / (k + rank)
        fused = {
            cid: s / ((wl if cid in unvectored and wl > 0 else total_w) / (k + 1))
            for cid, s in scores.items()
        }
    else:
        sem = {sc.chunk.id: sc.score for sc in semantic}
        lex = {sc.chunk.id: sc.score for sc in lexical}
        if config.normalisation == "minmax":
            sem, lex = _minmax(sem, config.semantic_min_spread), _minmax(lex)
            sem_floor = lex_floor = 0.0
        else:
            sem_floor = min(sem.values(), default=0.0)
            lex_floor = min(lex.values(), default=0.0)
        for sc in (*semantic, *lexical):
            chunks[sc.chunk.id] = sc.chunk
        share = config.best_share
        fused = {}
        for cid in chunks:
            lx = lex.get(cid, lex_floor)
            if cid in unvectored and wl > 0:
                fused[cid] = lx
                continue
            sm = sem.get(cid, sem_floor)
            mean = (ws * sm + wl * lx) / total_w
            fused[cid] = mean + share * (max(sm if ws > 0 else 0.0, lx if wl > 0 else 0.0) - mean)
    # Sorted on plain tuples: best first, then path and line; the position keeps a stable
    # sort's order for the rest and never lets a chunk be compared.
    ordered = sorted(
        (-fused[cid], c.file_path, c.start_line, i, c) for i, (cid, c) in enumerate(chunks.items())
    )
    return [ScoredChunk(c, min(1.0, max(0.0, -neg))) for neg, _, _, _, c in ordered]


def abstains(
    semantic: Sequence[ScoredChunk], lexical: Sequence[ScoredChunk], config: FusionConfig
) -> bool:
    """Whether the semantic list abstains from a hybrid search (see the module doc). Never
    when the lexical list is empty (the semantic list is then all there is) or when the
    semantic one holds fewer than ``min_candidates`` chunks (a narrow scope: few candidates
    close together say nothing of the model's certainty)."""
    if config.semantic_abstain_spread <= 0 or not lexical:
        return False
    if len(semantic) < config.min_candidates:
        return False
    scores = [sc.score for sc in semantic]
    return max(scores) - min(scores) < config.semantic_abstain_spread


def lexical_led(
    semantic: Sequence[ScoredChunk], lexical: Sequence[ScoredChunk]
) -> list[ScoredChunk]:
    """The lexical list as it is, then the semantic list's other chunks in its order, scored
    0: what a hybrid search ranks when the semantic list abstains."""
    seen = {sc.chunk.id for sc in lexical}
    return [*lexical, *(ScoredChunk(sc.chunk, 0.0) for sc in semantic if sc.chunk.id not in seen)]


def merged(
    semantic: Sequence[ScoredChunk], lexical: Sequence[ScoredChunk], config: FusionConfig
) -> list[ScoredChunk]:
    """A semantic search over chunks of which some have no vector: the chunks of
    ``semantic`` by their similarity, those of ``lexical`` (none with a vector) by their BM25,
    each list rescaled over its own candidates (the semantic one with its least spread), then
    one order by score: each chunk by the one evidence it has."""
    sem = _minmax({sc.chunk.id: sc.score for sc in semantic}, config.semantic_min_spread)
    lex = _minmax({sc.chunk.id: sc.score for sc in lexical})
    both = [ScoredChunk(sc.chunk, sem[sc.chunk.id]) for sc in semantic]
    both += [ScoredChunk(sc.chunk, lex[sc.chunk.id]) for sc in lexical]
    ordered = sorted(
        (-sc.score, sc.chunk.file_path, sc.chunk.start_line, i, sc) for i, sc in enumerate(both)
    )
    return [ScoredChunk(sc.chunk, min(1.0, max(0.0, sc.score))) for *_, sc in ordered]
