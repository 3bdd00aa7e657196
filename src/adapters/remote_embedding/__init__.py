"""What the HTTP embedders (Ollama, OpenAI-compatible) share: retries, batching, truncation.

Not an adapter of any port: a helper package that ``adapters.ollama`` and ``adapters.openai``
import (the one exception to "adapters never import each other", so that both retry and batch
the same way).
"""

from codebase_mcp_search.adapters.remote_embedding.client import (
    HttpEmbeddingOptions,
    RemoteEmbedder,
    ServerReply,
    redact_url,
)

__all__ = ["HttpEmbeddingOptions", "RemoteEmbedder", "ServerReply", "redact_url"]
