"""The derived int8 graph's rewrites that change rounding, not arithmetic (issue 33).

Applied to the graph whose attention is fused already and checked bit for bit
(``attention``), they make a chunk's vector about 1.3x cheaper in CPU on the built-in model:

- each ``MultiHeadAttention`` without its key padding mask: the embedder runs an int8 graph
  one unpadded text at a time, so the mask is all ones and says nothing, and onnxruntime then
  takes its other attention kernel;
- the erf GELU (``x * ((erf(x / sqrt 2) + 1) * 0.5)``, six nodes) as ``com.microsoft.Gelu``;
- at run time, onnxruntime's ``SkipLayerNormFusion`` off (``DISABLED_OPTIMIZERS``): its fused
  kernel takes about 260 us a call on this kind of CPU against 40-70 us for the plain Add and
  ``LayerNormalization``.

The same arithmetic in another order: in float32 the outputs move by about 1e-7, but the int8
graph quantises every activation at run time, so a value one rounding step away can land on
the next of 256 levels, and the vectors move (cosine 0.992 least, 0.9988 mean against the
exact graph's on 6,000 chunks; as close to the float32 model's as before: bench/README.md).
``close_outputs`` is the check: a vector per probe at cosine ``MIN_COSINE`` or more to the
plain int8 graph's, else the rewrite is refused (``model_files.int8_graph``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from codebase_mcp_search.adapters.onnx import graph_proto
from codebase_mcp_search.adapters.onnx.attention import MASK_INPUT, MS_DOMAIN, live, vocabulary
from codebase_mcp_search.adapters.onnx.graph_proto import node

# onnxruntime optimisers the derived graph runs without (see the module docstring).
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
# The least cosine of a probe's vector to the plain int8 graph's. The rewrites give 0.992 at
# worst on real chunks; a wrong rewrite (a GELU dropped, a scale 5% off) gives less (the tests).
MIN_COSINE = 0.99
_SQRT2 = float(np.sqrt(np.float32(2.0)))


def approximate(source: Path, target: Path) -> bool:
    """Write ``source`` (an int8 graph with fused attention) with the rewrites to ``target``;
    False (and nothing written) when it has no fused attention or a GELU not recognised."""
    model = graph_proto.read_model(source)
    graph = model.graph
    attentions = [n for n in graph.node if n.op_type == "MultiHeadAttention"]
    if not attentions:
        return False
    for n in attentions:
        del n.input[3:]  # the key padding mask (and nothing after it)
    nodes = _fuse_gelu(graph)
    if nodes is None:
        return False
    # The mask's Cast is read no more.
    graph_proto.set_nodes(graph, live(nodes, {o.name for o in graph.output}))
    graph_proto.drop_unused_initialisers(graph)
    target.write_bytes(model.SerializeToString())
    return True


def _fuse_gelu(graph: Any) -> list[Any] | None:
    """The graph's nodes with every erf GELU one ``Gelu`` node; None if an ``Erf`` is used
    otherwise."""
    producer = {o: n for n in graph.node for o in n.output}
    readers: dict[str, list[Any]] = {}
    for n in graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    constants = {t.name: graph_proto.constant(t) for t in graph.initializer}

    def scalar(name: str) -> float | None:
        value = constants.get(name)
        return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None

    def only_reader(name: str, op: str) -> Any:
        found = readers.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op else None

    def other(n: Any, name: str) -> str:
        (rest,) = [i for i in n.input if i != name] or [name]
        return str(rest)

    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for erf in (n for n in graph.node if n.op_type == "Erf"):
        div = producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or scalar(div.input[1]) is None:
            return None
        x = div.input[0]
        add = only_reader(erf.output[0], "Add")
        half = add and only_reader(add.output[0], "Mul")
        times_x = half and only_reader(half.output[0], "Mul")
        if not (add and half and times_x):
            return None
        if (
            abs(float(scalar(div.input[1]) or 0) - _SQRT2) > 1e-6
            or scalar(other(add, erf.output[0])) != 1.0
            or scalar(other(half, add.output[0])) != 0.5
            or other(times_x, half.output[0]) != x
            or len(readers.get(div.output[0], [])) != 1
        ):
            return None
        replaced[id(times_x)] = node("Gelu", [x], [times_x.output[0]], MS_DOMAIN)
        dropped.update(id(n) for n in (div, erf, add, half))
    return [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]


def close_outputs(plain: Path, derived: Path) -> bool:
    """Whether ``derived`` (run as the embedder runs it: ``DISABLED_OPTIMIZERS``, one
    unpadded text per run) gives every probe a mean-pooled vector at cosine ``MIN_COSINE`` or
    more to ``plain``'s. Probes: texts of random tokens, 3 to 256 long."""
    ort: Any = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    rng = np.random.default_rng(33)
    rows = vocabulary(plain)
    try:
        one = ort.InferenceSession(str(plain), options, providers=["CPUExecutionProvider"])
        two = ort.InferenceSession(
            str(derived),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(DISABLED_OPTIMIZERS),
        )
        names = {i.name for i in one.get_inputs()}
        for length in (3, 9, 31, 64, 128, 256):
            ids = rng.integers(min(1000, rows - 1), rows, size=(1, length))
            feed = {"input_ids": ids, MASK_INPUT: np.ones_like(ids), "token_type_ids": 0 * ids}
            feed = {k: v for k, v in feed.items() if k in names}
            for a, b in zip(one.run(None, feed), two.run(None, feed), strict=True):
                if a.shape != b.shape:
                    return False
                u, v = (x.mean(axis=1) if x.ndim == 3 else x for x in (a, b))
                u, v = (x.reshape(-1) / np.linalg.norm(x) for x in (u, v))
                if not float(u @ v) >= MIN_COSINE:  # a NaN fails too
                    return False
    except Exception:  # noqa: BLE001
        # onnxruntime's own exception classes: a graph it cannot load or run is no match.
        return False
    return True
