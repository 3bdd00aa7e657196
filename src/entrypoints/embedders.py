"""Which embedder a process uses: the configured one, opened, or (``auto``) the first that
works of Ollama, the built-in ONNX model and the local extra, else none (lexical search only).
A container resource (``Container.embedder_choice``): chosen once per process, and logged.

Every embedder is imported when chosen: a lexical search or a task command never loads
httpx, numpy or the model's runtime (a CLI command's start is mostly imports)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.core.ports import Embedder

if TYPE_CHECKING:
    import httpx

    from codebase_mcp_search.adapters.local import LocalEmbedder
    from codebase_mcp_search.adapters.ollama import OllamaEmbedder
    from codebase_mcp_search.adapters.onnx import OnnxEmbedder
    from codebase_mcp_search.adapters.openai import OpenAICompatibleEmbedder
    from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions

log = logging.getLogger("codebase_mcp")


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """The embedder in use (None: lexical search only), what was asked for and why;
    ``fallback``: ``auto`` settled for less than it would have taken (an Ollama that answers
    without the model, or failed to embed; an ONNX model that would not load): news worth
    telling, where taking the ONNX model without an Ollama running is the ordinary case."""

    embedder: Embedder | None
    requested: str
    chosen: str
    reason: str
    fallback: bool = False


def _options(config: Mapping[str, Any]) -> HttpEmbeddingOptions:
    """(``max_input_chars`` None: the embedder's own default for its server kind.)"""
    from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions

    return HttpEmbeddingOptions(
        batch_size=config["embedding_batch_size"],
        max_in_flight=config["embedding_concurrency"],
        timeout_s=config["embedding_timeout"],
        retries=config["embedding_retries"],
        max_input_chars=config["embedding_max_chars"],
    )


def _ollama(config: Mapping[str, Any], client: httpx.AsyncClient) -> OllamaEmbedder:
    from codebase_mcp_search.adapters.ollama import OllamaEmbedder

    return OllamaEmbedder(
        client,
        config["ollama_base_url"],
        config["ollama_embedding_model"],
        _options(config),
    )


def _openai(config: Mapping[str, Any], client: httpx.AsyncClient) -> OpenAICompatibleEmbedder:
    from codebase_mcp_search.adapters.openai import OpenAICompatibleEmbedder

    key = config["openai_api_key"]
    return OpenAICompatibleEmbedder(
        client,
        config["openai_base_url"],
        config["openai_embedding_model"],
        key.get_secret_value() if key is not None else None,
        _options(config),
    )


def _onnx(config: Mapping[str, Any], client: httpx.AsyncClient) -> OnnxEmbedder:
    """(``client`` unused: the signature of every entry of ``_OPENED``.)"""
    from codebase_mcp_search.adapters.onnx import OnnxEmbedder

    return OnnxEmbedder(
        config["onnx_model"],
        model_dir=config["onnx_model_dir"],
        graph_file=config["onnx_file"],
        quantize=config["onnx_quantize"],
        cache_dir=Path(config["data_dir"]) / "models",
        batch_size=config["embedding_batch_size"],
        max_tokens=config["onnx_max_tokens"],
        parallel_runs=config["onnx_parallel_runs"],
    )


def _local(config: Mapping[str, Any], client: httpx.AsyncClient) -> LocalEmbedder:
    """(``client`` unused: the signature of every entry of ``_OPENED``.)"""
    from codebase_mcp_search.adapters.local import LocalEmbedder

    return LocalEmbedder(config["local_model"], batch_size=config["embedding_batch_size"])


def local_extra_installed() -> bool:
    """Whether the ``local`` extra (sentence-transformers) can be imported."""
    from codebase_mcp_search.adapters import local

    return local.local_extra_installed()


# The embedders that must be opened (a server asked, a model loaded) before use.
_OPENED: dict[
    str,
    Callable[
        [Mapping[str, Any], httpx.AsyncClient],
        OllamaEmbedder | OpenAICompatibleEmbedder | OnnxEmbedder | LocalEmbedder,
    ],
] = {"ollama": _ollama, "openai": _openai, "onnx": _onnx, "local": _local}


async def choose_embedder(config: Mapping[str, Any], client: httpx.AsyncClient) -> EmbedderChoice:
    """The configured embedder, opened (dimension known). ``auto`` tries Ollama, then the ONNX
    model, then the local model, then settles for none; an explicit choice raises
    ``EmbedderUnavailable``."""
    requested = config["embedder"]
    if requested == "none":
        return EmbedderChoice(None, requested, "none", "CODEBASE_MCP_EMBEDDER=none")
    if requested == "hash":
        from codebase_mcp_search.adapters.hashing import HashingEmbedder

        hashing = HashingEmbedder(dimension=config["hash_dimension"])
        return EmbedderChoice(hashing, requested, "hash", "CODEBASE_MCP_EMBEDDER=hash")
    if requested != "auto":
        explicit = _OPENED[requested](config, client)
        await explicit.open()
        return EmbedderChoice(explicit, requested, requested, f"CODEBASE_MCP_EMBEDDER={requested}")
    from codebase_mcp_search.adapters.ollama import UNREACHABLE as OLLAMA_UNREACHABLE

    server = _ollama(config, client)
    found, why_not_ollama = await server.has_model()
    # Something answers at Ollama's address but is not used: the user may have meant it to be.
    passed_over = found or OLLAMA_UNREACHABLE not in why_not_ollama
    if found:
        try:
            await server.open()
            return EmbedderChoice(server, requested, "ollama", why_not_ollama)
        except EmbedderUnavailable as e:
            why_not_ollama = e.message
    onnx = _onnx(config, client)
    try:
        await onnx.open()
        reason = f"{why_not_ollama}; the ONNX model loaded"
        return EmbedderChoice(onnx, requested, "onnx", reason, fallback=passed_over)
    except EmbedderUnavailable as e:
        why_not = f"{why_not_ollama}; {e.message}"
    if not local_extra_installed():
        reason = f"{why_not}; the local extra is not installed: lexical search only"
        return EmbedderChoice(None, requested, "none", reason, fallback=True)
    local = _local(config, client)
    try:
        await local.open()
    except EmbedderUnavailable as e:
        return EmbedderChoice(None, requested, "none", f"{why_not}; {e.message}", fallback=True)
    reason = f"{why_not}; the local extra is installed"
    return EmbedderChoice(local, requested, "local", reason, fallback=True)


async def embedder_choice(
    config: Mapping[str, Any], client: httpx.AsyncClient
) -> AsyncIterator[EmbedderChoice]:
    """``choose_embedder`` as a container resource: chosen once per process, and logged."""
    choice = await choose_embedder(config, client)
    model = (
        f"{choice.embedder.model} ({choice.embedder.dimension} dimensions)"
        if choice.embedder
        else "lexical search only"
    )
    # A fallback is news worth a line on every command; the ordinary choice (the ONNX model
    # where no Ollama runs, or an explicit one) is what the user expects: doctor shows it.
    level = logging.INFO if choice.fallback else logging.DEBUG
    from codebase_mcp_search.adapters.remote_embedding import redact_url

    log.log(level, "embedder: %s, %s [%s]", choice.chosen, model, redact_url(choice.reason))
    yield choice
