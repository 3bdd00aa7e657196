"""A per-channel dynamically quantised int8 graph, made without the ``onnx`` package.

Every ``MatMul`` whose second input is a constant ``[K, N]`` float matrix reads int8 weights
instead: symmetric, one scale per output column (``max |w| / 127``). Its activation input is
quantised to uint8 at run time (``DynamicQuantizeLinear``, once per activation even when the
query, key and value projections all read it), multiplied as integers (``MatMulInteger``)
and scaled back (``Cast``, ``Mul``); onnxruntime fuses these at load. This is the graph
``onnxruntime.quantization.quantize_dynamic(per_channel=True, weight_type=QInt8,
op_types_to_quantize=["MatMul"])`` writes (the same vectors, bit for bit, on MiniLM), without
that module's dependency on the ``onnx`` package (about 30 MB installed).

The file is read and written with ``protobuf`` (``graph_proto``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codebase_mcp_search.adapters.onnx import graph_proto
from codebase_mcp_search.adapters.onnx.graph_proto import FLOAT, INT8, node


def _matrix(tensor: Any) -> np.ndarray[Any, Any] | None:
    """A float tensor's values as a 2-D array, or None for anything else."""
    if tensor.data_type != FLOAT or len(tensor.dims) != 2:
        return None
    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype="<f4")
    else:
        values = np.asarray(tensor.float_data, dtype=np.float32)
    return values.reshape(tuple(tensor.dims))


def quantise_weights(
    weights: np.ndarray[Any, Any],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Symmetric int8 per output column: (int8 ``[K, N]``, float32 scales ``[N]``)."""
    step = np.abs(weights).max(axis=0).astype(np.float32) / np.float32(127.0)
    # An all-zero (or subnormal) column gets scale 1: its weights round to 0 either way.
    scale = np.where(step > 0, step, np.float32(1.0)).astype(np.float32)
    quantised = np.clip(np.rint(weights / scale), -127, 127).astype(np.int8)
    return quantised, scale


def quantise_graph(source: Path, target: Path) -> int:
    """Write ``source``'s graph with its constant-weight MatMuls quantised (see the module
    docstring) to ``target``; returns how many MatMuls were rewritten."""
    model = graph_proto.read_model(source)
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    made: dict[str, tuple[str, str, str]] = {}
    # One DynamicQuantizeLinear per activation, shared by the MatMuls that read it (the
    # query, key and value projections read one), placed before the first of them.
    quantised_inputs: dict[str, tuple[str, str, str]] = {}
    nodes: list[Any] = []
    rewritten = 0
    for n in graph.node:
        if n.op_type != "MatMul" or n.domain not in ("", "ai.onnx") or len(n.input) != 2:
            nodes.append(n)
            continue
        name = n.input[1]
        if name not in made:
            tensor = weights.get(name)
            matrix = _matrix(tensor) if tensor is not None else None
            if matrix is None:
                nodes.append(n)
                continue
            q, scale = quantise_weights(matrix)
            names = (f"{name}_int8pc", f"{name}_int8pc_scale", f"{name}_int8pc_zero")
            graph.initializer.add(
                name=names[0], data_type=INT8, dims=list(q.shape), raw_data=q.tobytes()
            )
            graph.initializer.add(
                name=names[1],
                data_type=FLOAT,
                dims=[q.shape[1]],
                raw_data=scale.astype("<f4").tobytes(),
            )
            graph.initializer.add(
                name=names[2], data_type=INT8, dims=[q.shape[1]], raw_data=bytes(q.shape[1])
            )
            made[name] = names
        w_q, w_scale, w_zero = made[name]
        a, out = n.input[0], n.output[0]
        if a not in quantised_inputs:
            quantised_inputs[a] = (f"{a}_u8", f"{a}_u8_scale", f"{a}_u8_zero")
            nodes.append(node("DynamicQuantizeLinear", [a], list(quantised_inputs[a])))
        a_q, a_scale, a_zero = quantised_inputs[a]
        base = n.name or out
        nodes.append(node("MatMulInteger", [a_q, w_q, a_zero, w_zero], [f"{base}_i32"]))
        nodes.append(node("Cast", [f"{base}_i32"], [f"{base}_f32"], to=FLOAT))
        nodes.append(node("Mul", [a_scale, w_scale], [f"{base}_scale"]))
        nodes.append(node("Mul", [f"{base}_f32", f"{base}_scale"], [out]))
        rewritten += 1
    graph_proto.set_nodes(graph, nodes)
    # Drop the float weights no node reads any more.
    graph_proto.drop_unused_initialisers(graph)
    target.write_bytes(model.SerializeToString())
    return rewritten
