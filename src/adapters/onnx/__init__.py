"""The default embedder: an ONNX sentence-embedding model on onnxruntime (no torch)."""

from codebase_mcp_search.adapters.onnx.embedder import DEFAULT_MODEL, OnnxEmbedder
from codebase_mcp_search.adapters.onnx.model_files import BUILTIN_MODEL, WEIGHTS_SHA256

__all__ = ["BUILTIN_MODEL", "DEFAULT_MODEL", "WEIGHTS_SHA256", "OnnxEmbedder"]
