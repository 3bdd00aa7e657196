"""What the embedders running a model in this process share (``adapters.onnx``,
``adapters.local``): not an adapter of any port, a helper both may import."""

from codebase_mcp_search.adapters.in_process.embedder import InProcessEmbedder

__all__ = ["InProcessEmbedder"]
