"""The derived int8 graph (issue 33). Its fused attention (adapters.onnx.attention): the same
vectors as the plain int8 graph on real code, single texts and padded batches, and a rewrite
that would change them is refused. Then the rewrites that change rounding
(adapters.onnx.approximate: no mask, Gelu, no SkipLayerNormFusion): vectors within cosine 0.99
of the plain int8 graph's on real code, and a rewrite further off is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from codebase_mcp_search.adapters.onnx import OnnxEmbedder, approximate, attention, graph_proto
from codebase_mcp_search.adapters.onnx import model_files as model_files_module
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def plain_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The int8 graph as derived before attention was fused: folded, quantised."""
    folder = tmp_path_factory.mktemp("plain-int8")
    files = model_files_module.builtin_files()
    model_files_module._fold_constants(files.graph, folder / "folded.onnx")
    model_files_module._quantise(folder / "folded.onnx", folder / "int8.onnx")
    return folder / "int8.onnx"


@pytest.fixture(scope="module")
def fused_int8(plain_int8: Path) -> Path:
    """The plain int8 graph with its attention fused, the mask kept (recipe mha-v2)."""
    fused = plain_int8.parent / "fused.onnx"
    assert attention.fuse_attention(plain_int8, fused) == 6
    return fused


@pytest.fixture(scope="module")
def derived_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The graph the default embedder derives and runs."""
    cache = tmp_path_factory.mktemp("derived")
    return model_files_module.int8_graph(model_files_module.builtin_files(), cache)


@pytest.fixture(scope="module")
def code_chunks() -> list[str]:
    """Chunks of this repository's own source, as the indexer cuts them: 80 of every length,
    and one over the model's 256 tokens."""
    chunker = TreeSitterChunker(TiktokenCounter())
    texts: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        texts += [c.content for c in chunker.chunk(str(path), path.read_text(), "python")]
    return [*texts[::7][:80], "x", "def f():\n    return 1\n" * 60]


def _folder_with(graph: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "minilm"
    shutil.copytree(model_files_module.BUILTIN_FILES, folder)
    shutil.copy(graph, folder / "model.onnx")
    return folder


def test_every_attention_is_one_fused_node(fused_int8: Path, plain_int8: Path) -> None:
    fused = graph_proto.operators(fused_int8)
    assert "MultiHeadAttention" in fused
    # The attention's own ops and the mask's subgraph are gone.
    assert not fused & {"Softmax", "Transpose", "Where", "IsNaN", "GatherND"}
    assert {"Softmax", "Where"} <= graph_proto.operators(plain_int8)
    layers = sum(
        n.op_type == "MultiHeadAttention" for n in graph_proto.read_model(fused_int8).graph.node
    )
    assert layers == 6  # all-MiniLM-L6-v2


def test_the_derived_graph_reads_no_mask_and_fuses_every_gelu(derived_int8: Path) -> None:
    assert derived_int8.name.endswith("-int8-dyn-pc-matmul-mha-gelu-v3.onnx")
    nodes = graph_proto.read_model(derived_int8).graph.node
    ops = [n.op_type for n in nodes]
    assert ops.count("MultiHeadAttention") == 6
    assert ops.count("Gelu") == 6
    assert "Erf" not in ops
    assert not any(attention.MASK_INPUT in n.input for n in nodes)


@pytest.mark.slow
@pytest.mark.parametrize("rows", [1, 4], ids=["one-text-per-run", "padded-batches-of-4"])
async def test_vectors_agree_with_the_plain_int8_graph_on_real_code(
    rows: int, fused_int8: Path, plain_int8: Path, code_chunks: list[str], tmp_path: Path
) -> None:
    """One text per run (the default) and padded batches (the mask is kept)."""
    embedders = []
    for graph, name in ((fused_int8, "fused"), (plain_int8, "plain")):
        embedder = OnnxEmbedder(
            model_dir=_folder_with(graph, tmp_path / name), quantize=False, parallel_runs=1
        )
        await embedder.open()
        embedder._rows_per_run = rows
        embedders.append(embedder)
    fused, plain = [np.asarray((await e.embed_documents(code_chunks)).vectors) for e in embedders]
    cosines = (fused * plain).sum(axis=1)
    assert cosines.min() >= 0.9999, np.argsort(cosines)[:5]
    # In fact the same, bit for bit: same kernels, same order of operations.
    assert np.array_equal(fused, plain)


def test_a_fused_graph_that_computes_otherwise_is_refused(
    plain_int8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check that guards the rewrite can fail: a scale off by one part in a million, or
    the mask dropped, and the plain graph is kept."""
    fused = tmp_path / "fused.onnx"
    assert attention.fuse_attention(plain_int8, fused) == 6
    assert attention.same_outputs(plain_int8, fused)
    # (Padded batches: the check's probes hold one; the derived graph drops the mask only
    # afterwards, for the embedder's one text per run.)
    for change in ("scale", "mask"):
        model = graph_proto.read_model(fused)
        for n in model.graph.node:
            if n.op_type == "MultiHeadAttention":
                if change == "scale":
                    (scale,) = (a for a in n.attribute if a.name == "scale")
                    scale.f *= 1.000001
                else:
                    del n.input[3:]
        broken = tmp_path / f"no-{change}.onnx"
        broken.write_bytes(model.SerializeToString())
        assert not attention.same_outputs(plain_int8, broken), change
    monkeypatch.setattr(attention, "same_outputs", lambda plain, fused: False)
    derived = model_files_module.int8_graph(model_files_module.builtin_files(), tmp_path / "c")
    assert not graph_proto.operators(derived) & {"MultiHeadAttention", "Gelu"}
    assert [p.name for p in (tmp_path / "c").iterdir()] == [derived.name]


@pytest.mark.slow
async def test_the_default_vectors_are_close_to_the_plain_int8_graphs_on_real_code(
    derived_int8: Path, plain_int8: Path, code_chunks: list[str], tmp_path: Path
) -> None:
    """The default embedder (the derived graph, run without SkipLayerNormFusion, one text per
    run) against the plain int8 graph as it ran before issue 33."""
    derived = OnnxEmbedder(cache_dir=derived_int8.parent, parallel_runs=1)
    plain = OnnxEmbedder(
        model_dir=_folder_with(plain_int8, tmp_path / "plain"), quantize=False, parallel_runs=1
    )
    new, old = [
        np.asarray((await e.embed_documents(code_chunks)).vectors) for e in (derived, plain)
    ]
    cosines = (new * old).sum(axis=1)
    # Measured on 6,000 chunks: 0.992 least, 0.9988 mean (bench/README.md).
    assert cosines.min() >= approximate.MIN_COSINE, np.argsort(cosines)[:5]
    assert cosines.mean() >= 0.998
    # Not the same: the test would pass on the plain graph too otherwise.
    assert not np.array_equal(new, old)


async def test_the_embedder_runs_the_derived_graph_as_checked(
    derived_int8: Path, code_chunks: list[str]
) -> None:
    """Without SkipLayerNormFusion, as ``close_outputs`` ran it: a bare session so made gives
    the embedder's vectors bit for bit."""
    ort = pytest.importorskip("onnxruntime")
    embedder = OnnxEmbedder(cache_dir=derived_int8.parent, parallel_runs=1)
    text = code_chunks[3]
    got = np.asarray((await embedder.embed_documents([text])).vectors[0])
    ids = np.asarray([embedder._tokenizer.encode(text).ids])
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    outputs = {}
    for name, extra in (("as checked", model_files_module.DERIVED_SESSION), ("default", {})):
        session = ort.InferenceSession(str(derived_int8), options, **extra)
        hidden = session.run(["last_hidden_state"], feed)[0][0].mean(axis=0)
        outputs[name] = hidden / np.linalg.norm(hidden)
    assert np.array_equal(got, outputs["as checked"].astype(np.float32))
    assert not np.array_equal(outputs["as checked"], outputs["default"])


def test_an_approximation_further_off_is_refused(
    fused_int8: Path, plain_int8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound can fail: an attention scale 5% off, or a GELU become the identity, and the
    exact fused graph is kept."""
    derived = tmp_path / "approx.onnx"
    assert approximate.approximate(fused_int8, derived)
    assert approximate.close_outputs(plain_int8, derived)
    for change in ("scale", "gelu"):
        model = graph_proto.read_model(derived)
        for n in model.graph.node:
            if change == "scale" and n.op_type == "MultiHeadAttention":
                (scale,) = (a for a in n.attribute if a.name == "scale")
                scale.f *= 1.05
            elif change == "gelu" and n.op_type == "Gelu":
                n.op_type, n.domain = "Identity", ""
        broken = tmp_path / f"broken-{change}.onnx"
        broken.write_bytes(model.SerializeToString())
        assert not approximate.close_outputs(plain_int8, broken), change
    monkeypatch.setattr(approximate, "close_outputs", lambda plain, derived: False)
    kept = model_files_module.int8_graph(model_files_module.builtin_files(), tmp_path / "c")
    ops = graph_proto.operators(kept)
    assert "MultiHeadAttention" in ops
    assert "Gelu" not in ops
    assert [p.name for p in (tmp_path / "c").iterdir()] == [kept.name]


def test_a_graph_with_an_attention_it_does_not_know_is_left_alone(
    plain_int8: Path, tmp_path: Path
) -> None:
    """All or nothing: one layer whose softmax runs over another axis."""
    model = graph_proto.read_model(plain_int8)
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    softmax.attribute[0].i = 2  # over the queries: no attention the node computes
    odd = tmp_path / "odd.onnx"
    odd.write_bytes(model.SerializeToString())
    assert attention.fuse_attention(odd, tmp_path / "fused.onnx") == 0
    assert not (tmp_path / "fused.onnx").exists()
