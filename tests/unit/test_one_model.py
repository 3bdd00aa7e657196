"""The one-model rule (``core.policies.one_model``): who may add vectors beside whom, the
one message every refusal gives, and the fix each interface says for it."""

from __future__ import annotations

import pytest

from codebase_mcp_search.core.errors import Hint, ModelMismatch
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model
from codebase_mcp_search.entrypoints.cli.errors import error_line
from codebase_mcp_search.entrypoints.mcp.errors import tool_text

HELD = HeldVectors(
    model="m1", dimension=64, repository="demo", repository_id="r1", path="/repos/demo"
)


def test_the_same_model_passes() -> None:
    check_one_model(HELD, "m1", 64)
    check_one_model(HELD, "m1")  # dimension unknown: the model decides
    check_one_model(HeldVectors(model="m1"), "m1", 128)
    check_one_model(HeldVectors(model=None), None)  # no vectors, no embedder


@pytest.mark.parametrize(
    ("model", "dimension"), [("m2", 64), ("m1", 128), (None, None), ("m2", None)]
)
def test_another_model_or_dimension_raises(model: str | None, dimension: int | None) -> None:
    with pytest.raises(ModelMismatch):
        check_one_model(HELD, model, dimension)


def test_the_message_names_the_holder_both_models_and_the_fix() -> None:
    with pytest.raises(ModelMismatch) as err:
        check_one_model(HELD, "m2", 128)
    message = str(err.value)
    assert "repository 'demo' (r1)" in message
    assert "64-dimensional vectors of m1" in message
    assert "128-dimensional vectors of m2" in message
    assert err.value.code == "MODEL_MISMATCH" and err.value.details["repository_id"] == "r1"
    assert err.value.hint is Hint.ONE_MODEL and err.value.details["path"] == "/repos/demo"
    # Each interface says the fix in its own terms.
    assert "force_reindex=true" in tool_text(err.value) and "codebase-mcp" not in tool_text(
        err.value
    )
    cli = error_line(err.value)
    assert "codebase-mcp index /repos/demo --force" in cli and "force_reindex" not in cli


def test_a_repository_without_vectors_is_told_to_re_index_without_force() -> None:
    with pytest.raises(ModelMismatch) as err:
        check_one_model(HeldVectors(model=None, repository="demo", path="/repos/demo"), "m1", 64)
    assert err.value.hint is Hint.ADD_VECTORS
    assert "no force_reindex needed" in tool_text(err.value)
    assert "'codebase-mcp index /repos/demo' (no --force needed)" in error_line(err.value)


def test_a_lexical_only_holder_and_a_missing_embedder_are_named_as_such() -> None:
    with pytest.raises(ModelMismatch) as err:
        check_one_model(HeldVectors(model=None, repository="demo"), "m1", 64)
    assert "no vectors" in str(err.value) and "vectors of m1" in str(err.value)
    with pytest.raises(ModelMismatch) as err:
        check_one_model(HELD, None)
    assert "none (no embedder)" in str(err.value)


def test_a_store_checking_raw_vectors_names_the_project_and_the_sizes() -> None:
    with pytest.raises(ModelMismatch) as err:
        check_one_model(HeldVectors(model=None, dimension=64), None, 32)
    message = str(err.value)
    assert "this project holds 64-dimensional vectors" in message
    assert "32-dimensional vectors" in message
    assert err.value.details["repository_id"] is None and err.value.details["path"] is None
    assert "codebase-mcp index PATH --force" in error_line(err.value)
