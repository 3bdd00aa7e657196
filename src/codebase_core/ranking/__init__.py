"""The ranking stack: from a search's fused candidates to the order a developer wants.

Pure functions over core models, applied by ``SearchService`` to the candidates of every mode,
so every store ranks alike: ``query`` (what the query asks for), ``paths`` (what a path says),
``definitions`` (does a chunk define a name), ``path_words`` (a question's words in paths),
``hollow`` (chunks that carry no behaviour), ``rerank`` (the scoring, in order).
"""

from codebase_mcp_search.core.ranking.config import RankingConfig
from codebase_mcp_search.core.ranking.query import QueryKind, QueryProfile, analyse_query
from codebase_mcp_search.core.ranking.rerank import rerank

__all__ = ["QueryKind", "QueryProfile", "RankingConfig", "analyse_query", "rerank"]
