"""ONNX graphs read and written with ``protobuf`` alone (no ``onnx`` package, about 30 MB).

A description of the few ONNX messages the graph rewrites (``quantise``, ``attention``) touch,
with ONNX's own field numbers (onnx.proto, proto2); every other field (value infos' types,
metadata, other attributes) passes through untouched as unknown fields.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FLOAT = 1  # TensorProto.DataType.FLOAT
INT8 = 3  # TensorProto.DataType.INT8
INT32 = 6  # TensorProto.DataType.INT32
INT64 = 7  # TensorProto.DataType.INT64
_ATTRIBUTE_FLOAT = 1  # AttributeProto.AttributeType.FLOAT
_ATTRIBUTE_INT = 2  # AttributeProto.AttributeType.INT

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_BYTES = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
_INT32 = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
_INT64 = descriptor_pb2.FieldDescriptorProto.TYPE_INT64
_FLOAT_T = descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
# (message, [(field name, number, type, repeated, message type)])
_MESSAGES: list[tuple[str, list[tuple[str, int, int, bool, str]]]] = [
    (
        "AttributeProto",
        [
            ("name", 1, _STRING, False, ""),
            ("f", 2, _FLOAT_T, False, ""),
            ("i", 3, _INT64, False, ""),
            ("ints", 8, _INT64, True, ""),
            ("type", 20, _INT32, False, ""),
        ],
    ),
    (
        "TensorProto",
        [
            ("dims", 1, _INT64, True, ""),
            ("data_type", 2, _INT32, False, ""),
            ("float_data", 4, _FLOAT_T, True, ""),
            ("int64_data", 7, _INT64, True, ""),
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
    ("ValueInfoProto", [("name", 1, _STRING, False, "")]),
    (
        "GraphProto",
        [
            ("node", 1, _MESSAGE, True, "NodeProto"),
            ("initializer", 5, _MESSAGE, True, "TensorProto"),
            ("input", 11, _MESSAGE, True, "ValueInfoProto"),
            ("output", 12, _MESSAGE, True, "ValueInfoProto"),
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


@functools.cache
def _node_class() -> Any:
    graph = _model_class().DESCRIPTOR.fields_by_name["graph"].message_type
    return message_factory.GetMessageClass(graph.fields_by_name["node"].message_type)


def read_model(path: Path) -> Any:
    """The graph file's ``ModelProto`` (the subset)."""
    model = _model_class()()
    model.ParseFromString(path.read_bytes())
    return model


def node(
    op_type: str,
    inputs: list[str],
    outputs: list[str],
    domain: str = "",
    **attributes: float,
) -> Any:
    """A new node; its attributes are ints (a Python int) or floats, all the rewrites write."""
    made = _node_class()(op_type=op_type)
    if domain:
        made.domain = domain
    made.input.extend(inputs)
    made.output.extend(outputs)
    for name, value in attributes.items():
        if isinstance(value, float):
            made.attribute.add(name=name, f=value, type=_ATTRIBUTE_FLOAT)
        else:
            made.attribute.add(name=name, i=value, type=_ATTRIBUTE_INT)
    return made


def set_nodes(graph: Any, nodes: list[Any]) -> None:
    """Replace the graph's nodes with ``nodes`` (which may be the graph's own)."""
    # Copies: clearing the repeated field would leave the graph's own nodes detached.
    kept = [_node_class().FromString(n.SerializeToString()) for n in nodes]
    del graph.node[:]
    graph.node.extend(kept)


def drop_unused_initialisers(graph: Any) -> None:
    used = {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    if len(kept) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)


def constant(tensor: Any) -> np.ndarray[Any, Any] | None:
    """A float32 or int64 initialiser's values (shaped), None for other types."""
    dtype = {FLOAT: "<f4", INT64: "<i8"}.get(tensor.data_type)
    if dtype is None:
        return None
    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype=dtype)
    elif tensor.data_type == FLOAT:
        values = np.asarray(tensor.float_data, dtype=np.float32)
    else:
        values = np.asarray(tensor.int64_data, dtype=np.int64)
    return values.reshape(tuple(tensor.dims))


def operators(graph: Path) -> set[str]:
    """The operator types a graph's nodes use."""
    return {n.op_type for n in read_model(graph).graph.node}
