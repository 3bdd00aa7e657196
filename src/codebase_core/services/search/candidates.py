"""What a search gathers before its hits: the semantic half of its retrievals (``Dense``),
its ranked pool (``Pool``), and the fusion weights for the kind of query asked
(``fusion_for``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import Repository, ScoredChunk, SearchMode
from codebase_mcp_search.core.ranking import QueryProfile, RankingConfig
from codebase_mcp_search.core.services.search.scope import Scope


@dataclass(slots=True)
class Dense:
    """The semantic half of a search, and what it ranked lexically instead."""

    hits: list[ScoredChunk]
    total: int
    repositories: dict[str, Repository]
    """The repositories listed for the search, by id (for its hits' stale check)."""
    extra: list[ScoredChunk] = field(default_factory=list)
    """Semantic mode: lexical hits of the chunks without a vector."""
    extra_total: int = 0


@dataclass(slots=True)
class Pool:
    """A search's ranked candidates, and what its result reports of them."""

    ranked: list[ScoredChunk]
    mode: SearchMode
    total: int
    scope: Scope
    dense: bool
    """Whether vectors were compared (the result then names the repositories without)."""


def fusion_for(fusion: FusionConfig, r: RankingConfig, profile: QueryProfile) -> FusionConfig:
    """The fusion weights for this kind of query."""
    if (
        r.enabled
        and r.query_type_weights
        and not profile.is_symbol
        and profile.names
        and r.named_lexical_weight is not None
    ):
        return fusion.model_copy(update={"lexical_weight": r.named_lexical_weight})
    if not (r.enabled and r.query_type_weights and profile.is_symbol):
        return fusion
    return fusion.model_copy(
        update={
            "semantic_weight": r.symbol_semantic_weight,
            "lexical_weight": r.symbol_lexical_weight,
        }
    )
