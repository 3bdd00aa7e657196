"""Each self-attention of an encoder graph as one ``com.microsoft.MultiHeadAttention`` node.

The graph torch exports for ``scaled_dot_product_attention`` (the built-in model's) spells a
layer's attention in about 20 nodes: the query, key and value reshaped into heads and
transposed, scaled, multiplied, an additive mask added (built from ``attention_mask`` by 20
more nodes, once), softmax, a NaN guard, the product with the values, transposed back.
onnxruntime's optimiser does not fuse that export (its attention fusion knows other
patterns). One MultiHeadAttention node per layer computes the same with the same kernels (a
GEMM with the scale as alpha, the mask, softmax, a GEMM), in fewer passes over memory: on the
built-in model's int8 graph, the same vectors bit for bit at 1.1-1.2x fewer CPU seconds a chunk
(bench/README.md, "Cheaper vectors").

Matched from each ``Softmax``: scores ``MatMul(q, k)`` (scaled by constants before or after,
plus an optional additive mask), an optional ``Where(IsNaN(p), 0, p)``, ``MatMul(p, v)``,
``Transpose(0, 2, 1, 3)``, ``Reshape``; q, k and v each reached from a projection's bias
``Add`` through ``Reshape``, ``Transpose`` and constant scalings only. All or nothing: a graph
with an attention the pattern does not describe is left as it is. A mask becomes the node's
key padding mask (``attention_mask``, as int32), which ``same_outputs`` checks on a padded
batch: the rewrite is kept only when it changes no output (``model_files.int8_graph``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codebase_mcp_search.adapters.onnx import graph_proto
from codebase_mcp_search.adapters.onnx.graph_proto import INT32, node

MS_DOMAIN = "com.microsoft"
MASK_INPUT = "attention_mask"
_MASK_INT32 = "attention_mask_int32_for_mha"
# Ops that only move a tensor's elements (heads split, transposed).
_LAYOUT = frozenset({"Reshape", "Transpose"})


@dataclass(frozen=True, slots=True)
class _Attention:
    query: str
    key: str
    value: str
    output: Any  # the final Reshape, replaced by the fused node
    heads: int
    scale: float
    masked: bool


class _Graph:
    """Who makes and who reads each tensor, and the constants."""

    def __init__(self, graph: Any) -> None:
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list[Any]] = {}
        for n in graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.constants = {t.name: t for t in graph.initializer}

    def constant(self, name: str) -> np.ndarray[Any, Any] | None:
        tensor = self.constants.get(name)
        return graph_proto.constant(tensor) if tensor is not None else None

    def scalar(self, name: str) -> float | None:
        values = self.constant(name)
        if values is None or values.size != 1 or values.dtype != np.float32:
            return None
        return float(values.reshape(-1)[0])

    def only_reader(self, name: str) -> Any:
        readers = self.consumers.get(name, [])
        return readers[0] if len(readers) == 1 else None


def _attribute(n: Any, name: str) -> Any:
    for a in n.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return None


def _scaled(g: _Graph, name: str) -> tuple[str, np.float32]:
    """``name`` followed back through multiplications and divisions by scalar constants: the
    tensor before them and the factor they apply (float32, as onnxruntime folds them)."""
    factor = np.float32(1.0)
    while (n := g.producer.get(name)) is not None and n.op_type in ("Mul", "Div"):
        constant = g.scalar(n.input[1])
        if constant is not None:
            name = n.input[0]
        elif n.op_type == "Mul" and (constant := g.scalar(n.input[0])) is not None:
            name = n.input[1]
        else:
            break
        c = np.float32(constant)
        factor = factor * c if n.op_type == "Mul" else factor / c
    return name, factor


def _heads(g: _Graph, name: str) -> tuple[str, np.float32, Any] | None:
    """A head-split operand followed back to the projection: (its output, the constant factor
    on the way, the first Reshape after it), None unless the way has a Reshape and a
    Transpose and nothing but layout ops and scalings."""
    factor = np.float32(1.0)
    seen: set[str] = set()
    first_reshape = None
    while True:
        name, f = _scaled(g, name)
        factor = factor * f
        n = g.producer.get(name)
        if n is None or n.op_type not in _LAYOUT:
            break
        seen.add(n.op_type)
        if n.op_type == "Reshape":
            first_reshape = n
        name = n.input[0]
    if seen != _LAYOUT:
        return None
    return name, factor, first_reshape


def _projection_width(g: _Graph, name: str) -> int | None:
    """The hidden size, read from the bias a projection adds last."""
    n = g.producer.get(name)
    if n is None or n.op_type != "Add":
        return None
    for i in n.input:
        bias = g.constant(i)
        if bias is not None and bias.ndim == 1 and bias.dtype == np.float32:
            return int(bias.shape[0])
    return None


def _head_size(g: _Graph, reshape: Any, hidden: int) -> int | None:
    """From the shape ``[batch, sequence, heads, head size]`` the hidden state is split by:
    a constant, or a Concat with constant heads or head size."""
    shape = g.constant(reshape.input[1])
    if shape is not None:
        parts: list[int | None] = [int(x) for x in shape.reshape(-1)]
    else:
        concat = g.producer.get(reshape.input[1])
        if concat is None or concat.op_type != "Concat":
            return None
        parts = []
        for i in concat.input:
            value = g.constant(i)
            parts += [int(x) for x in value.reshape(-1)] if value is not None else [None]
    if len(parts) != 4:
        return None
    heads, size = parts[2], parts[3]
    if size is not None and size > 0:
        return size if hidden % size == 0 else None
    if heads is not None and heads > 0 and hidden % heads == 0:
        return hidden // heads
    return None


def _match(g: _Graph, softmax: Any, inputs: set[str]) -> _Attention | None:
    if _attribute(softmax, "axis") not in (-1, 3):
        return None
    scores, masked = softmax.input[0], False
    add = g.producer.get(scores)
    if add is not None and add.op_type == "Add":
        for i in add.input:
            inner, _ = _scaled(g, i)
            made = g.producer.get(inner)
            if made is not None and made.op_type == "MatMul":
                scores, masked = i, True
                break
        else:
            return None
    scores, post = _scaled(g, scores)
    qk = g.producer.get(scores)
    if qk is None or qk.op_type != "MatMul" or (masked and MASK_INPUT not in inputs):
        return None
    query, key = _heads(g, qk.input[0]), _heads(g, qk.input[1])
    probs = softmax.output[0]
    readers = g.consumers.get(probs, [])
    if sorted(r.op_type for r in readers) == ["IsNaN", "Where"]:
        (isnan,) = (r for r in readers if r.op_type == "IsNaN")
        (where,) = (r for r in readers if r.op_type == "Where")
        if list(where.input) != [isnan.output[0], where.input[1], probs]:
            return None
        if g.scalar(where.input[1]) != 0.0 or g.only_reader(isnan.output[0]) is not where:
            return None
        probs = where.output[0]
    pv = g.only_reader(probs)
    if pv is None or pv.op_type != "MatMul" or pv.input[0] != probs:
        return None
    value = _heads(g, pv.input[1])
    back = g.only_reader(pv.output[0])
    if back is None or back.op_type != "Transpose" or _attribute(back, "perm") != [0, 2, 1, 3]:
        return None
    merged = g.only_reader(back.output[0])
    if merged is None or merged.op_type != "Reshape":
        return None
    if query is None or key is None or value is None or value[1] != 1.0:
        return None
    roots = [query[0], key[0], value[0]]
    widths = {_projection_width(g, r) for r in roots}
    if len(set(roots)) != 3 or len(widths) != 1 or None in widths:
        return None
    (hidden,) = widths
    assert hidden is not None
    size = _head_size(g, value[2], hidden)
    if size is None:
        return None
    return _Attention(
        query=roots[0],
        key=roots[1],
        value=roots[2],
        output=merged,
        heads=hidden // size,
        scale=float(np.float32(query[1] * key[1] * post)),
        masked=masked,
    )


def fuse_attention(source: Path, target: Path) -> int:
    """Write ``source``'s graph with every attention fused (see the module docstring) to
    ``target``; returns how many were, 0 (and nothing written) when any does not match."""
    model = graph_proto.read_model(source)
    graph = model.graph
    g = _Graph(graph)
    inputs = {i.name for i in graph.input}
    found = []
    for n in graph.node:
        if n.op_type == "Softmax" and n.domain in ("", "ai.onnx"):
            match = _match(g, n, inputs)
            if match is None:
                return 0
            found.append(match)
    if not found:
        return 0
    fused = {id(a.output): a for a in found}
    nodes: list[Any] = []
    if any(a.masked for a in found):
        nodes.append(node("Cast", [MASK_INPUT], [_MASK_INT32], to=INT32))
    for n in graph.node:
        a = fused.get(id(n))
        if a is None:
            nodes.append(n)
            continue
        mask = ["", _MASK_INT32] if a.masked else []
        nodes.append(
            node(
                "MultiHeadAttention",
                [a.query, a.key, a.value, *mask],
                [n.output[0]],
                MS_DOMAIN,
                num_heads=a.heads,
                scale=a.scale,
            )
        )
    graph_proto.set_nodes(graph, live(nodes, {o.name for o in graph.output}))
    graph_proto.drop_unused_initialisers(graph)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.add(domain=MS_DOMAIN, version=1)
    target.write_bytes(model.SerializeToString())
    return len(found)


def live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """The nodes the graph's outputs need (the mask's own subgraph is not, once fused)."""
    needed = set(outputs)
    kept = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            kept.append(n)
            needed.update(i for i in n.input if i)
    kept.reverse()
    return kept


def same_outputs(plain: Path, fused: Path) -> bool:
    """Whether the two graphs give the same outputs, bit for bit, on probes: single texts of
    several lengths and a padded batch (its real tokens). An int8 graph turns any change of
    float rounding into different vectors (dynamic quantisation rounds every activation), so
    nothing less counts as the same."""
    ort: Any = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    rows = vocabulary(plain)
    rng = np.random.default_rng(33)
    probes = []
    for length in (5, 48, 200):
        ids = rng.integers(0, rows, size=(1, length))
        probes.append((ids, np.ones_like(ids)))
    ids = rng.integers(0, rows, size=(2, 40))
    mask = np.ones_like(ids)
    mask[1, 13:] = 0
    probes.append((ids * mask, mask))
    try:
        one, two = (
            ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
            for p in (plain, fused)
        )
        names = {i.name for i in one.get_inputs()}
        for ids, mask in probes:
            feed = {"input_ids": ids, MASK_INPUT: mask, "token_type_ids": np.zeros_like(ids)}
            feed = {k: v for k, v in feed.items() if k in names}
            for a, b in zip(one.run(None, feed), two.run(None, feed), strict=True):
                real = mask == 1 if a.ndim == 3 else slice(None)  # padding is never read
                if a.shape != b.shape or not np.array_equal(a[real], b[real]):
                    return False
    except Exception:  # noqa: BLE001
        # onnxruntime's own exception classes: a graph it cannot load or run is no match.
        return False
    return True


def vocabulary(graph: Path) -> int:
    """Rows of the embedding table ``input_ids`` index (100 when not found)."""
    g = graph_proto.read_model(graph).graph
    tables = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "Gather" and len(n.input) == 2 and n.input[1] == "input_ids":
            table = tables.get(n.input[0])
            if table is not None and table.dims:
                return int(table.dims[0])
    return 100
