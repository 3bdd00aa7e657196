"""The ``Embedder`` port: text to vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from codebase_mcp_search.core.models import Embeddings


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors.

    Contract: ``embed_documents`` returns one vector per input text, in order, each of
    ``dimension`` floats (L2 norm need not be 1); a text longer than the model takes is
    embedded from its beginning and counted in ``Embeddings.truncated``, never refused.
    ``model`` names the model so that stored vectors are never mixed across models. A server
    or model that cannot be used raises ``EmbedderUnavailable`` (after the adapter's own
    retries of transient failures).
    """

    @property
    def model(self) -> str:
        """A stable name of the model (part of the embedding cache key)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        """Vectors for chunks of code or text to be stored."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector for a search query (models may treat queries differently)."""
        ...


def embeds_inline(embedder: Embedder) -> bool:
    """Whether an indexing run embeds its chunks as it writes them (an embedder whose class
    sets ``inline = True``: its vectors cost about what writing them does, as feature hashing's
    do), instead of leaving them to the semantic layer: a second pass over the chunks would
    then cost more than the embedding itself."""
    return getattr(embedder, "inline", False) is True
