"""A per-channel dynamically quantised int8 graph, made without the ``onnx`` package.

Every ``MatMul`` whose second input is a constant ``[K, N]`` float matrix reads int8 weights
instead: symmetric, one scale per output column (``max |w| / 127``). Its activation input is
quantised to uint8 at run time (``DynamicQuantizeLinear``, once per activation even when the
query, key and value projections all read it), multiplied as integers (``MatMulInteger``)
and scaled back (``Cast``, ``Mul``); onnxruntime fuses these at load. This is the graph
``onnxruntime.quantization.quantize_dynamic(per_channel=True, weight_type=QInt8,
op_types_to_quantize=["MatMul"])`` writes (the same vectors, bit for bit, on MiniLM), without
that module's dependency on the ``onnx`` package (about 30 MB installed).

The file is read and written with ``protobuf`` (which onnxruntime requires) through a
description of the few ONNX messages the rewrite touches, with ONNX's own field numbers;
every other field (value infos, metadata, other attributes) passes through untouched as
unknown fields.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FLOAT = 1  # TensorProto.DataType.FLOAT
_INT8 = 3  # TensorProto.DataType.INT8

# (message, [(field name, number, type, repeated)]): the subset of onnx.proto (proto2) the
# rewrite reads or writes, with ONNX's own field numbers.
_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_BYTES = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
_INT32 = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
_INT64 = descriptor_pb2.FieldDescriptorProto.TYPE_INT64
_FLOAT_T = descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_MESSAGES: list[tuple[str, list[tuple[str, int, int, bool, str]]]] = [
    (
        "AttributeProto",
        [
            ("name", 1, _STRING, False, ""),
            ("i", 3, _INT64, False, ""),
            ("type", 20, _INT32, False, ""),
        ],
    ),
    (
        "TensorProto",
        [
            ("dims", 1, _INT64, True, ""),
            ("data_type", 2, _INT32, False, ""),
            ("float_data", 4, _FLOAT_T, True, ""),
            ("name", 8, _STRING, False, ""),
            ("raw_data", 9, _BYTES, False, ""),
        ],
    ),
    (
        "NodeProto",
        [
            ("input", 1, _STRING, True, ""),
            ("output", 2, _STRING, True, ""),
            ("name", 3, _STRING, False, ""),
            ("op_type", 4, _STRING, False, ""),
            ("attribute", 5, _MESSAGE, True, "AttributeProto"),
            ("domain", 7, _STRING, False, ""),
        ],
    ),
    (
        "GraphProto",
        [
            ("node", 1, _MESSAGE, True, "NodeProto"),
            ("initializer", 5, _MESSAGE, True, "TensorProto"),
        ],
    ),
    ("OperatorSetIdProto", [("domain", 1, _STRING, False, ""), ("version", 2, _INT64, False, "")]),
    (
        "ModelProto",
        [
            ("graph", 7, _MESSAGE, False, "GraphProto"),
            ("opset_import", 8, _MESSAGE, True, "OperatorSetIdProto"),
        ],
    ),
]


@functools.cache
def _model_class() -> Any:
    """The ``ModelProto`` class of the subset (built once)."""
    package = "codebase_mcp_onnx_subset"
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{package}.proto", package=package, syntax="proto2"
    )
    for message, fields in _MESSAGES:
        m = file.message_type.add(name=message)
        for name, number, kind, repeated, type_name in fields:
            f = m.field.add(name=name, number=number, type=kind)
            f.label = (
                descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
                if repeated
                else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
            )
            if type_name:
                f.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.ModelProto"))


def _matrix(tensor: Any) -> np.ndarray[Any, Any] | None:
    """A float tensor's values as a 2-D array, or None for anything else."""
    if tensor.data_type != _FLOAT or len(tensor.dims) != 2:
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
    model = _model_class()()
    model.ParseFromString(source.read_bytes())
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    made: dict[str, tuple[str, str, str]] = {}
    # One DynamicQuantizeLinear per activation, shared by the MatMuls that read it (the
    # query, key and value projections read one), placed before the first of them.
    quantised_inputs: dict[str, tuple[str, str, str]] = {}
    nodes: list[Any] = []
    rewritten = 0
    for node in graph.node:
        if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            nodes.append(node)
            continue
        name = node.input[1]
        if name not in made:
            tensor = weights.get(name)
            matrix = _matrix(tensor) if tensor is not None else None
            if matrix is None:
                nodes.append(node)
                continue
            q, scale = quantise_weights(matrix)
            names = (f"{name}_int8pc", f"{name}_int8pc_scale", f"{name}_int8pc_zero")
            graph.initializer.add(
                name=names[0], data_type=_INT8, dims=list(q.shape), raw_data=q.tobytes()
            )
            graph.initializer.add(
                name=names[1],
                data_type=_FLOAT,
                dims=[q.shape[1]],
                raw_data=scale.astype("<f4").tobytes(),
            )
            graph.initializer.add(
                name=names[2], data_type=_INT8, dims=[q.shape[1]], raw_data=bytes(q.shape[1])
            )
            made[name] = names
        w_q, w_scale, w_zero = made[name]
        a, out = node.input[0], node.output[0]
        if a not in quantised_inputs:
            quantised_inputs[a] = (f"{a}_u8", f"{a}_u8_scale", f"{a}_u8_zero")
            nodes.append(_node("DynamicQuantizeLinear", [a], list(quantised_inputs[a])))
        a_q, a_scale, a_zero = quantised_inputs[a]
        base = node.name or out
        nodes.append(_node("MatMulInteger", [a_q, w_q, a_zero, w_zero], [f"{base}_i32"]))
        cast = _node("Cast", [f"{base}_i32"], [f"{base}_f32"])
        cast.attribute.add(name="to", i=_FLOAT, type=_ATTRIBUTE_INT)
        nodes.append(cast)
        nodes.append(_node("Mul", [a_scale, w_scale], [f"{base}_scale"]))
        nodes.append(_node("Mul", [f"{base}_f32", f"{base}_scale"], [out]))
        rewritten += 1
    # Copies: clearing the repeated field would leave the graph's own nodes detached.
    kept_nodes = [_node_class().FromString(n.SerializeToString()) for n in nodes]
    del graph.node[:]
    graph.node.extend(kept_nodes)
    # Drop the float weights no node reads any more.
    used = {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    if len(kept) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)
    target.write_bytes(model.SerializeToString())
    return rewritten


_ATTRIBUTE_INT = 2  # AttributeProto.AttributeType.INT


def _node(op_type: str, inputs: list[str], outputs: list[str]) -> Any:
    node = _node_class()(op_type=op_type)
    node.input.extend(inputs)
    node.output.extend(outputs)
    return node


@functools.cache
def _node_class() -> Any:
    graph = _model_class().DESCRIPTOR.fields_by_name["graph"].message_type
    return message_factory.GetMessageClass(graph.fields_by_name["node"].message_type)


def operators(graph: Path) -> set[str]:
    """The operator types a graph's nodes use."""
    model = _model_class()()
    model.ParseFromString(graph.read_bytes())
    return {n.op_type for n in model.graph.node}
