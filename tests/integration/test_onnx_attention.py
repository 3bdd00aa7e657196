"""The derived int8 graph's fused attention (adapters.onnx.attention, issue 33): the same
vectors as the plain int8 graph on real code, single texts and padded batches, and a rewrite
that would change them is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from codebase_mcp_search.adapters.onnx import OnnxEmbedder, attention, graph_proto
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
def fused_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
    assert "MultiHeadAttention" not in graph_proto.operators(derived)
    assert [p.name for p in (tmp_path / "c").iterdir()] == [derived.name]


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
