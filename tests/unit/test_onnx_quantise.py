"""adapters.onnx.quantise: per-column symmetric int8 weights (the graph rewrite itself is
checked against the official model's vectors in tests/integration/test_onnx_embedder.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from codebase_mcp_search.adapters.onnx.quantise import quantise_weights

_MATRICES = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=8),
    elements=st.floats(-100, 100, width=32),
)


@settings(max_examples=200, deadline=None)
@given(weights=_MATRICES)
def test_each_column_is_rebuilt_within_half_a_step(weights: np.ndarray) -> None:
    q, scale = quantise_weights(weights)
    assert q.dtype == np.int8 and q.shape == weights.shape
    assert scale.dtype == np.float32 and scale.shape == (weights.shape[1],)
    assert q.min() >= -127  # symmetric: -128 is never used
    rebuilt = q.astype(np.float32) * scale
    assert np.all(np.abs(rebuilt - weights) <= scale / 2 * (1 + 1e-5) + 1e-12)


def test_a_zero_column_gets_a_unit_scale() -> None:
    q, scale = quantise_weights(np.array([[0.0, 1.0], [0.0, -2.0]], dtype=np.float32))
    assert scale.tolist() == [1.0, np.float32(2.0 / 127)]
    assert q[:, 0].tolist() == [0, 0]
    assert q[:, 1].tolist() == [64, -127]
