"""The one-model rule: a project holds vectors of one embedding model, at one dimension.

Vectors of two models are not comparable (nor are two dimensions), so mixing them would
rank garbage without an error. Every place that could mix them (indexing, searching, and
each store's write and search paths) asks ``check_one_model`` with what it holds, and so
every refusal reads the same and carries the same hint (the fix, in each interface's terms).
"""

from __future__ import annotations

from dataclasses import dataclass

from codebase_mcp_search.core.errors import Hint, ModelMismatch


@dataclass(frozen=True, slots=True)
class HeldVectors:
    """What a store, or one repository of it, holds.

    ``model`` None means no vectors (indexed without an embedder) when ``dimension`` is None
    too, and an unnamed model of that dimension otherwise (a store checking raw vectors).
    ``repository`` and ``path`` name the holder when it is one repository.
    """

    model: str | None
    dimension: int | None = None
    repository: str | None = None
    repository_id: str | None = None
    path: str | None = None


def check_one_model(held: HeldVectors, model: str | None, dimension: int | None = None) -> None:
    """Raise ``ModelMismatch`` unless vectors of ``model`` (at ``dimension``, when known) may
    sit beside ``held``: same model, and same dimension where both are known."""
    if held.model == model and (
        held.dimension is None or dimension is None or held.dimension == dimension
    ):
        return
    add = held.model is None and held.dimension is None
    raise ModelMismatch(
        mismatch_message(held, model, dimension),
        # Nothing to drop: a plain incremental run re-chunks it whole with the embedder.
        hint=Hint.ADD_VECTORS if add else Hint.ONE_MODEL,
        repository_id=held.repository_id,
        path=held.path,
    )


def mismatch_message(held: HeldVectors, model: str | None, dimension: int | None) -> str:
    """The one text of a ``ModelMismatch``: who holds what, and what was offered (the fix is
    the interface's to say, from the error's hint)."""
    where = "this project"
    if held.repository is not None:
        where = f"repository {held.repository!r}"
        if held.repository_id is not None:
            where += f" ({held.repository_id})"
    holds = _describe(held.model, held.dimension, "no vectors (indexed without an embedder)")
    gives = _describe(model, dimension, "none (no embedder)")
    return f"{where} holds {holds}, the embedder in use gives {gives}"


def _describe(model: str | None, dimension: int | None, nothing: str) -> str:
    if model is None and dimension is None:
        return nothing
    dims = f"{dimension}-dimensional " if dimension is not None else ""
    return f"{dims}vectors of {model}" if model is not None else f"{dims}vectors"
