"""A bare name asks for the thing itself: a chunk defining it only as a member of something
else yields to a chunk defining it as a name of its own (``ranking.rerank.definition_gains``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core.models import ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.ranking.definitions import is_member_definition
from tests.unit.test_ranking import chunk

_TYPE = chunk("gin.go", "type Engine struct {\n    RouterGroup\n}", "Engine", line=90)
_METHOD = chunk(
    "binding/default_validator.go",
    "func (v *defaultValidator) Engine() any {\n    return v.validate\n}",
    "defaultValidator.Engine",
    line=81,
)
_USE = chunk("context.go", "engine := c.engine\nreturn engine.Engine", None, line=10)


def _order(cands: list[ScoredChunk], query: str, config: RankingConfig) -> list[str]:
    return [s.chunk.file_path for s in rerank(cands, analyse_query(query), config)]


def test_a_member_is_told_from_a_name_of_its_own() -> None:
    assert is_member_definition(_METHOD, "Engine")
    assert not is_member_definition(_TYPE, "Engine")
    # A merged chunk holding the name of its own as well as a member: not only a member.
    both = chunk("a.go", "type Engine struct{}", "Engine, defaultValidator.Engine")
    assert not is_member_definition(both, "Engine")
    # Found by its keyword alone (no symbol): nothing says it is a member.
    assert not is_member_definition(chunk("b.go", "type Engine struct{}"), "Engine")


def test_a_type_defined_inside_another_is_the_thing_itself() -> None:
    # An Elixir module's full name is dotted (the chunker records its pieces as ``module``),
    # and a nested class is a type of its own: neither is a member, whatever its symbol says.
    router = 'defmodule Phoenix.Router do\n  @moduledoc "Routes."\n'
    for kind in ("class", "header", "module"):
        module = chunk("lib/phoenix/router.ex", router, "Phoenix.Router").model_copy(
            update={"kind": kind}
        )
        assert not is_member_definition(module, "Router")
    nested = chunk("Outer.java", "static class Builder {}", "Outer.Builder")
    assert not is_member_definition(nested.model_copy(update={"kind": "class"}), "Builder")
    assert is_member_definition(nested.model_copy(update={"kind": "method"}), "Builder")
    # A use of the name in another file's documentation does not demote the module: both
    # define it as their own, and the module's file is named after it.
    example = chunk("lib/phoenix/verified_routes.ex", "defmodule MyAppWeb.Router do\n  use X")
    module = chunk("lib/phoenix/router.ex", router, "Phoenix.Router").model_copy(
        update={"kind": "module"}
    )
    cands = [ScoredChunk(example, 1.0), ScoredChunk(module, 0.6)]
    assert _order(cands, "Router", RankingConfig())[0] == "lib/phoenix/router.ex"


def test_the_type_outranks_a_same_named_method_that_retrieved_better() -> None:
    cands = [ScoredChunk(_METHOD, 1.0), ScoredChunk(_TYPE, 0.05), ScoredChunk(_USE, 0.6)]
    assert _order(cands, "Engine", RankingConfig())[0] == "gin.go"
    # Alike, the better-retrieved method would win.
    alike = RankingConfig(member_factor=1.0)
    assert _order(cands, "Engine", alike)[0] == "binding/default_validator.go"


def test_members_keep_their_whole_boost_when_no_chunk_defines_the_name_itself() -> None:
    # A method name: every definition is a member, and each still outranks a use.
    other = chunk(
        "tree.go", "func (n *node) Engine() *Engine {\n    return n.engine\n}", "node.Engine"
    )
    cands = [ScoredChunk(_USE, 1.0), ScoredChunk(_METHOD, 0.0), ScoredChunk(other, 0.0)]
    order = _order(cands, "Engine", RankingConfig())
    assert order[-1] == "context.go"


def test_a_qualified_query_demotes_no_member() -> None:
    cands = [ScoredChunk(_TYPE, 1.0), ScoredChunk(_METHOD, 0.3), ScoredChunk(_USE, 0.6)]
    profile = analyse_query("defaultValidator.Engine")
    cut = rerank(cands, profile, RankingConfig(member_factor=0.0))
    assert cut == rerank(cands, profile, RankingConfig(member_factor=1.0))


_SYMBOLS = [None, "Engine", "defaultValidator.Engine", "node.Engine", "Other"]
_TEXTS = [
    "type Engine struct {}",
    "func (v *defaultValidator) Engine() any { return nil }",
    "e := Engine{}",
    "}",
]


@st.composite
def _candidates(draw: st.DrawFn) -> list[ScoredChunk]:
    out = []
    for i in range(draw(st.integers(min_value=0, max_value=10))):
        c = chunk(
            draw(st.sampled_from(["gin.go", "a/b.go", "c.go", "engine.go"])),
            draw(st.sampled_from(_TEXTS)),
            draw(st.sampled_from(_SYMBOLS)),
            line=i * 10 + 1,
        )
        out.append(ScoredChunk(c, draw(st.floats(min_value=0.0, max_value=1.0))))
    return out


@settings(max_examples=200, deadline=None)
@given(cands=_candidates(), factor=st.floats(min_value=0.0, max_value=1.0))
def test_the_member_factor_lowers_members_only(cands: list[ScoredChunk], factor: float) -> None:
    """Without the file decay, members never rise and nothing else moves; with it, a chunk
    that is not a member never falls (members falling can only let it up its file's order;
    a member itself may rise there when its file's other members fall further)."""
    profile = analyse_query("Engine")

    def scores(**fields: float) -> dict[str, float]:
        return {s.chunk.id: s.score for s in rerank(cands, profile, RankingConfig(**fields))}

    flat_full = scores(member_factor=1.0, file_decay=1.0)
    flat_cut = scores(member_factor=factor, file_decay=1.0)
    full, cut = scores(member_factor=1.0), scores(member_factor=factor)
    for s in cands:
        cid = s.chunk.id
        if is_member_definition(s.chunk, "Engine"):
            assert flat_cut[cid] <= flat_full[cid] + 1e-12
        else:
            assert flat_cut[cid] == flat_full[cid]
            assert cut[cid] >= full[cid] - 1e-12
