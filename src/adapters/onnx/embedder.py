"""OnnxEmbedder: a sentence-embedding model on onnxruntime, with no torch."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from codebase_mcp_search.adapters.in_process import InProcessEmbedder
from codebase_mcp_search.adapters.onnx.model_files import (
    BUILTIN_MODEL,
    DERIVED_SESSION,
    ModelFiles,
    builtin_files,
    folder_files,
    hub_files,
    int8_graph,
    is_quantised,
    load_tokenizer,
    read_json,
)
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import EmbedderUnavailable, ValidationFailed
from codebase_mcp_search.core.models import Embeddings

log = logging.getLogger("codebase_mcp.embedder")

DEFAULT_MODEL = defaults.ONNX_MODEL
# Where a library user's derived graphs go unless told: the product's default data folder.
_DEFAULT_CACHE = Path(platformdirs.user_data_dir("codebase-mcp", appauthor=False)) / "models"
# Token sequences longer than the model's position table cannot run at all.
_FALLBACK_MAX_TOKENS = 512
# The least token budget a document may be given: [CLS], [SEP] and a few words.
MIN_TOKEN_BUDGET = 8


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class OnnxEmbedder(InProcessEmbedder):
    """onnxruntime on the CPU, in a worker thread; owns its inference session and tokenizer.

    Mean (or CLS, as the model's pooling config says) pooling over the attention mask, L2
    normalisation. The texts of one call are sorted by token count into batches, so short
    chunks are not padded to the length of long ones; vectors come back in input order. A
    text longer than the model's sequence length is embedded from its beginning and counted.

    ``max_tokens`` is a document's token budget (special tokens included), capped by the
    model's own sequence length; None: the model's own. A document over it is embedded from
    its beginning (a chunk starts with its signature and doc comment) and counted in
    ``Embeddings.truncated``, which thus counts the documents longer than what the model saw.
    Queries are not cut by the budget, only by the model's length. The model's name does not
    change with the budget: a text within it gets the same vector bit for bit, and a longer
    one the vector of its beginning, a vector of the same space.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        model_dir: Path | None = None,
        graph_file: str | None = None,
        quantize: bool = defaults.ONNX_QUANTIZE,
        cache_dir: Path | None = None,
        batch_size: int = defaults.EMBEDDING_BATCH_SIZE,
        threads: int | None = None,
        max_tokens: int | None = defaults.ONNX_MAX_TOKENS,
        parallel_runs: int | None = defaults.ONNX_PARALLEL_RUNS,
    ) -> None:
        if not model.strip():
            raise ValidationFailed("CODEBASE_MCP_ONNX_MODEL", model, "must name a model")
        if batch_size < 1:
            raise ValidationFailed("batch_size", batch_size, "must be at least 1")
        if max_tokens is not None and max_tokens < MIN_TOKEN_BUDGET:
            raise ValidationFailed(
                "max_tokens", max_tokens, f"must be at least {MIN_TOKEN_BUDGET} (or unset)"
            )
        if parallel_runs is not None and parallel_runs < 1:
            raise ValidationFailed("parallel_runs", parallel_runs, "must be at least 1")
        super().__init__()
        self.model_name = model
        self._model_dir = Path(model_dir).expanduser() if model_dir is not None else None
        self._graph_file = graph_file or None
        self._quantize = quantize
        self._cache_dir = Path(cache_dir) if cache_dir is not None else _DEFAULT_CACHE
        self._batch_size = batch_size
        self._rows_per_run = batch_size
        self._threads = threads or _cpu_count()
        # One text per run barely uses a second core (a short sequence has little to split
        # among intra-op threads), so by default every thread runs a text of its own.
        self._parallel_runs = min(parallel_runs or self._threads, self._threads)
        self._pool: ThreadPoolExecutor | None = None
        self._token_budget = max_tokens
        # The model's own sequence length (queries), known once open; ``_max_tokens`` is a
        # document's (the budget, capped by it).
        self._query_tokens = 0
        self._session: Any = None
        self._tokenizer: Any = None
        self._query_tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()
        self._output = ""
        self._pooling = "mean"
        self._prompts: dict[str, str] = {}
        # One document call at a time: its runs already use every thread, and a tokenizer
        # must not be used from two threads at once ("Already borrowed"). A query has a
        # tokenizer and a lock of its own, so a search does not wait behind a batch of
        # documents (the session runs from several threads at once).
        self._run_lock = threading.Lock()
        self._query_lock = threading.Lock()

    @property
    def model(self) -> str:
        """Names the source and the graph (``-int8``: the derived int8 graph), so vectors of
        two graphs of one model are never mixed."""
        if self._model_dir is not None:
            base = self._model_dir.name or str(self._model_dir)
        else:
            base = "all-MiniLM-L6-v2" if self.model_name == BUILTIN_MODEL else self.model_name
        if self._graph_file:
            base = f"{base}:{self._graph_file}"
        return f"onnx/{base}" + ("-int8" if self._quantize else "")

    @property
    def _loaded(self) -> bool:
        return self._session is not None

    @property
    def max_tokens(self) -> int:
        """Tokens a document is embedded from: the budget, capped by the model's sequence
        length (known once open)."""
        return self._max_tokens

    def _files(self) -> ModelFiles:
        if self._model_dir is not None:
            return folder_files(self._model_dir, self._graph_file)
        if self.model_name == BUILTIN_MODEL and not self._graph_file:
            return builtin_files()
        return hub_files(self.model_name, self._graph_file)

    def _load(self) -> None:
        """(Derives and caches the int8 graph the first time.)"""
        files = self._files()
        try:
            ort: Any = importlib.import_module("onnxruntime")
        except ImportError as e:
            raise EmbedderUnavailable(
                f"{e.name} is not installed (a dependency of this package: reinstall it)"
            ) from None
        st_config = read_json(files.config_dir / "sentence_bert_config.json")
        pooling = read_json(files.config_dir / "1_Pooling" / "config.json")
        prompts = read_json(files.config_dir / "config_sentence_transformers.json").get("prompts")
        positions = read_json(files.config_dir / "config.json").get("max_position_embeddings")
        try:
            if self._quantize:
                graph, quantised = int8_graph(files, self._cache_dir), True
            else:
                graph = files.graph
                quantised = files.sha256 is None and is_quantised(graph)
            # A graph we derived runs as derived (a graph quantised already, as it is).
            derived = graph != files.graph
            tokenizer = load_tokenizer(files)
            options = ort.SessionOptions()
            # Runs at once share the threads: each run gets its share as intra-op threads.
            options.intra_op_num_threads = max(1, self._threads // self._parallel_runs)
            options.inter_op_num_threads = 1
            options.log_severity_level = 3  # no C++ warnings on our stderr
            session = ort.InferenceSession(
                str(graph),
                options,
                providers=["CPUExecutionProvider"],
                **(DERIVED_SESSION if derived else {}),
            )
        except EmbedderUnavailable:
            raise
        except Exception as e:  # noqa: BLE001
            # onnxruntime and tokenizers raise their own (untyped) exception classes.
            raise EmbedderUnavailable(
                f"{files.source}: cannot load the model ({type(e).__name__}: {str(e)[:300]})",
                model=self.model,
            ) from None
        truncation = tokenizer.truncation or {}
        model_tokens = int(
            st_config.get("max_seq_length")
            or truncation.get("max_length")
            or positions
            or _FALLBACK_MAX_TOKENS
        )
        if isinstance(positions, int) and positions > 0:
            model_tokens = min(model_tokens, positions)
        max_tokens = min(model_tokens, self._token_budget or model_tokens)
        tokenizer.enable_truncation(max_tokens)
        tokenizer.no_padding()
        self._pooling = self._pooling_mode(pooling, files)
        self._prompts = (
            {k: v for k, v in prompts.items() if isinstance(v, str)}
            if isinstance(prompts, dict)
            else {}
        )
        self._inputs = frozenset(i.name for i in session.get_inputs())
        outputs = {o.name: o for o in session.get_outputs()}
        self._output = next(
            (
                n
                for n in ("last_hidden_state", "token_embeddings", "sentence_embedding")
                if n in outputs
            ),
            next(iter(outputs)),
        )
        if "input_ids" not in self._inputs:
            raise EmbedderUnavailable(f"{files.source}: the graph takes no input_ids")
        query_tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        query_tokenizer.enable_truncation(model_tokens)
        self._tokenizer = tokenizer
        self._query_tokenizer = query_tokenizer
        self._max_tokens = max_tokens
        self._query_tokens = model_tokens
        # An int8 graph quantises its activations with one scale per tensor, so a text's
        # vector would depend on the other texts (and the padding) of its batch: one text per
        # run keeps vectors reproducible, and is no slower (no padding; measured 50 against
        # 47 texts/s at 32 per run). A derived graph's attention reads no mask: it is right
        # only so, for one unpadded text per run.
        self._rows_per_run = 1 if quantised else self._batch_size
        self._session = session
        if self._parallel_runs > 1:
            self._pool = ThreadPoolExecutor(self._parallel_runs, thread_name_prefix="onnx-run")
        probe = self._run([[self._cls_id()]])
        self._dimension = int(probe.shape[1])
        # Debug: the container logs the embedder it chose, once, at info.
        log.debug(
            "loaded %s from %s (%d dimensions, %d tokens, %d threads)",
            self.model,
            graph,
            self._dimension,
            self._max_tokens,
            self._threads,
        )

    @staticmethod
    def _pooling_mode(config: dict[str, Any], files: ModelFiles) -> str:
        if not config or config.get("pooling_mode_mean_tokens"):
            return "mean"
        if config.get("pooling_mode_cls_token"):
            return "cls"
        raise EmbedderUnavailable(
            f"{files.source}: pooling {config} is not supported (mean or CLS token only)"
        )

    def _cls_id(self) -> int:
        ids: list[int] = self._tokenizer.encode("").ids
        return ids[0] if ids else 0

    def _encode(self, texts: list[str], kind: str) -> Embeddings:
        prompt = self._prompts.get(kind, "")
        if prompt:
            texts = [prompt + t for t in texts]
        if kind == "query":
            # A query is cut at the model's length only (its cost is one short text).
            with self._query_lock:
                encodings = self._query_tokenizer.encode_batch(texts)
                rows = [self._run([e.ids])[0].tolist() for e in encodings]
            return Embeddings(vectors=rows, truncated=0)
        with self._run_lock:
            encodings = self._tokenizer.encode_batch(texts)
            # Exact: the tokenizer truncates at the budget and keeps what it cut.
            truncated = sum(1 for e in encodings if e.overflowing)
            ids = [e.ids for e in encodings]
            order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
            vectors: list[list[float]] = [[] for _ in texts]
            batches = [
                order[start : start + self._rows_per_run]
                for start in range(0, len(order), self._rows_per_run)
            ]

            def run(batch: list[int]) -> Any:
                return self._run([ids[i] for i in batch])

            # Runs are independent (ONNX Runtime's run is thread-safe and lets go of the GIL).
            done = (
                self._pool.map(run, batches)
                if self._pool and len(batches) > 1
                else map(run, batches)
            )
            for batch, out in zip(batches, done, strict=True):
                for i, row in zip(batch, out.tolist(), strict=True):
                    vectors[i] = row
        if kind == "document":
            self._log_truncated(truncated, len(texts))
        return Embeddings(vectors=vectors, truncated=truncated)

    def _run(self, batch: list[list[int]]) -> Any:
        """Unit vectors (a float32 array, one row per id list) for one padded batch."""
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        feed = {k: v for k, v in feed.items() if k in self._inputs}
        try:
            (out,) = self._session.run([self._output], feed)
        except Exception as e:  # noqa: BLE001
            # onnxruntime's own exception classes.
            raise EmbedderUnavailable(
                f"{self.model}: inference failed ({type(e).__name__}: {str(e)[:300]})"
            ) from None
        out = np.asarray(out, dtype=np.float32)
        if out.ndim == 3:
            if self._pooling == "cls":
                out = out[:, 0, :]
            else:
                weights = mask[:, :, None].astype(np.float32)
                out = (out * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)
