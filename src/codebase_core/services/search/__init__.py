"""Search over indexed chunks: ``SearchService`` (``service``) and what a search covers
(``scope``)."""

from codebase_mcp_search.core.services.search.scope import EmbedderProvider, no_semantic_model
from codebase_mcp_search.core.services.search.service import SearchService

__all__ = ["EmbedderProvider", "SearchService", "no_semantic_model"]
