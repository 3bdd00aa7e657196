"""Chunks that carry no behaviour (core.ranking.hollow) rank below the code that does the
work, unless the query names them; their file keeps its place. And a question in words that
names code fuses with its own lexical weight."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core.fusion import FusionConfig
from codebase_mcp_search.core.models import Chunk, ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.ranking.hollow import is_hollow, named_by
from codebase_mcp_search.core.ranking.paths import normalise_name
from codebase_mcp_search.core.services.search.candidates import fusion_for


def chunk(
    path: str, content: str, kind: str | None, symbol: str | None = None, line: int = 1
) -> Chunk:
    return Chunk(
        id=f"r:{path}:{line}",
        repository_id="r",
        file_path=path,
        language=None,
        symbol=symbol,
        kind=kind,
        start_line=line,
        end_line=line + content.count("\n"),
        content=content,
        content_hash=f"{path}:{line}",
        token_count=len(content.split()),
    )


_FOLLOW = (
    "def resolve_redirects(self, resp, req):\n"
    "    while resp.is_redirect:\n"
    "        req = self.rebuild(req, resp)\n"
    "        resp = self.send(req)\n"
    "    return resp"
)
_EXCEPTION = 'class TooManyRedirects(RequestException):\n    """Too many redirects."""\n'
_KOTLIN_MARKER = "class UnsupportedRedirect(message: String) : Exception(message)"
_HEADER = 'class Session:\n    """A session: cookies, redirects."""\n    max_redirects: int\n'
_IMPORTS = "from .models import Request\nimport os\n# redirects\nfrom .hooks import dispatch\n"
_ENUM = "class Kind(Enum):\n    A = 1\n    B = 2\n    C = 3\n    D = 4"


@pytest.mark.parametrize(
    ("content", "kind", "hollow"),
    [
        (_EXCEPTION, "class", True),
        (_KOTLIN_MARKER, "class", True),
        ("class Marker {}\n", "interface", True),
        (_HEADER, "header", True),
        (_IMPORTS, "module", True),
        (_FOLLOW, "function", False),
        (_FOLLOW, "method", False),
        # A type with a body that does something, module code that is not imports.
        (_ENUM, "class", False),
        ("DEFAULT_REDIRECT_LIMIT = 30\nsession = Session()\n", "module", False),
        (_EXCEPTION, None, False),
    ],
)
def test_what_carries_no_behaviour(content: str, kind: str | None, hollow: bool) -> None:
    assert is_hollow(chunk("a.py", content, kind)) is hollow


def test_a_name_in_the_query_names_the_chunk() -> None:
    c = chunk("exceptions.py", _EXCEPTION, "class", symbol="exceptions.TooManyRedirects")
    assert named_by(c, frozenset({"toomanyredirects", "raised"}))
    assert not named_by(c, frozenset({"redirects"}))
    assert not named_by(chunk("a.py", _IMPORTS, "module"), frozenset({"redirects"}))


def test_the_function_that_does_the_work_outranks_an_exception_class() -> None:
    exc = chunk("exceptions.py", _EXCEPTION, "class", symbol="TooManyRedirects")
    work = chunk("sessions.py", _FOLLOW, "method", symbol="SessionRedirectMixin.resolve_redirects")
    cands = [ScoredChunk(exc, 1.0), ScoredChunk(work, 0.8)]
    config = RankingConfig(hollow_prior=0.5, path_boost=0.0, coherence_boost=0.0)
    profile = analyse_query("where are redirects followed")
    assert [s.chunk for s in rerank(cands, profile, config)] == [work, exc]
    # Unless the query names it.
    named = analyse_query("when is TooManyRedirects raised")
    assert rerank(cands, named, config)[0].chunk == exc


def test_a_header_hands_its_files_place_to_the_files_working_chunk() -> None:
    header = chunk("sessions.py", _HEADER, "header", symbol="Session", line=1)
    work = chunk("sessions.py", _FOLLOW, "method", symbol="Session.resolve_redirects", line=40)
    other = chunk(
        "adapters.py", "def send(self, request):\n    return self.conn(request)", "method"
    )
    cands = [ScoredChunk(header, 1.0), ScoredChunk(other, 0.7), ScoredChunk(work, 0.4)]
    config = RankingConfig(hollow_prior=0.5)
    profile = analyse_query("how are redirects followed")
    before = rerank(cands, profile, config.model_copy(update={"hollow_prior": 1.0}))
    after = rerank(cands, profile, config)
    assert before[0].chunk == header
    assert after[0].chunk == work
    assert after[0].score == pytest.approx(before[0].score)


def test_a_re_export_file_alone_keeps_its_score() -> None:
    exports = chunk("websockets.py", _IMPORTS, "module")
    other = chunk("routing.py", _FOLLOW, "function")
    cands = [ScoredChunk(exports, 1.0), ScoredChunk(other, 0.9)]
    profile = analyse_query("websocket endpoint implementation")
    config = RankingConfig(hollow_prior=0.3)
    assert rerank(cands, profile, config) == rerank(
        cands, profile, config.model_copy(update={"hollow_prior": 1.0})
    )


# --- properties ----------------------------------------------------------------------------

_FILES = ["src/sessions.py", "src/models.py", "src/adapters.py"]
_HOLLOW = [
    (_EXCEPTION, "class"),
    (_HEADER, "header"),
    (_IMPORTS, "module"),
    (_KOTLIN_MARKER, "class"),
]
_WORKING = [
    (_FOLLOW, "method"),
    ("def send(self, request):\n    return self.conn.urlopen(request)", "function"),
    (_ENUM, "class"),
]
_QUERIES = st.sampled_from(
    ["where are redirects followed", "session redirects", "send", "TooManyRedirects", "Session"]
)


@st.composite
def files_with_work(draw: st.DrawFn) -> list[ScoredChunk]:
    """Candidates where every file holds at least one working chunk."""
    out: list[ScoredChunk] = []
    line = 1
    for path in draw(st.lists(st.sampled_from(_FILES), min_size=1, max_size=3, unique=True)):
        kinds = [draw(st.sampled_from(_WORKING))]
        kinds += draw(st.lists(st.sampled_from(_HOLLOW + _WORKING), max_size=3))
        for content, kind in kinds:
            symbol = draw(st.sampled_from([None, "TooManyRedirects", "Session", "send"]))
            c = chunk(path, content, kind, symbol=symbol, line=line)
            line += 100
            out.append(ScoredChunk(c, draw(st.floats(min_value=0.0, max_value=1.0))))
    return out


def _file_best(ranked: list[ScoredChunk]) -> dict[str, float]:
    best: dict[str, float] = {}
    for s in ranked:
        best[s.chunk.file_path] = max(best.get(s.chunk.file_path, 0.0), s.score)
    return best


@settings(max_examples=200, deadline=None)
@given(cands=files_with_work(), query=_QUERIES, prior=st.floats(min_value=0.05, max_value=1.0))
def test_a_file_with_working_code_keeps_its_best_score(
    cands: list[ScoredChunk], query: str, prior: float
) -> None:
    profile = analyse_query(query)
    with_prior = _file_best(rerank(cands, profile, RankingConfig(hollow_prior=prior)))
    without = _file_best(rerank(cands, profile, RankingConfig(hollow_prior=1.0)))
    assert with_prior.keys() == without.keys()
    for f, score in without.items():
        assert with_prior[f] == pytest.approx(score, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    cands=files_with_work(),
    query=_QUERIES,
    low=st.floats(min_value=0.05, max_value=1.0),
    high=st.floats(min_value=0.05, max_value=1.0),
)
def test_a_lower_hollow_prior_never_lifts_a_hollow_chunk_nor_lowers_a_working_one(
    cands: list[ScoredChunk], query: str, low: float, high: float
) -> None:
    low, high = min(low, high), max(low, high)
    profile = analyse_query(query)
    said = frozenset(normalise_name(t) for t in (*profile.tokens, *profile.names))
    # Without the per-file decay: a file's working chunk taking its place moves its siblings.
    config = RankingConfig(file_decay=1.0)
    lower = {
        s.chunk.id: s.score
        for s in rerank(cands, profile, config.model_copy(update={"hollow_prior": low}))
    }
    higher = rerank(cands, profile, config.model_copy(update={"hollow_prior": high}))
    for s in higher:
        if is_hollow(s.chunk) and not named_by(s.chunk, said):
            assert lower[s.chunk.id] <= s.score + 1e-9
        else:
            assert lower[s.chunk.id] >= s.score - 1e-9


@settings(max_examples=100, deadline=None)
@given(cands=files_with_work(), prior=st.floats(min_value=0.05, max_value=1.0))
def test_hollow_chunks_the_query_names_are_not_moved(
    cands: list[ScoredChunk], prior: float
) -> None:
    # Every hollow chunk is named by the query: nothing changes.
    named = [s for s in cands if not is_hollow(s.chunk) or s.chunk.symbol == "TooManyRedirects"]
    profile = analyse_query("TooManyRedirects")
    assert rerank(named, profile, RankingConfig(hollow_prior=prior)) == rerank(
        named, profile, RankingConfig(hollow_prior=1.0)
    )


# --- fusion weights for a question that names code ----------------------------------------


@pytest.mark.parametrize(
    ("query", "lexical_weight"),
    [
        ("how does parse_config read the file", 2.0),  # names code: the letters weigh more
        ("how is the config file read", 0.5),  # no name: the fusion's own
        ("parse_config", 1.0),  # a symbol query: the symbol weights
    ],
)
def test_a_question_naming_code_fuses_with_its_own_lexical_weight(
    query: str, lexical_weight: float
) -> None:
    ranking = RankingConfig(named_lexical_weight=2.0)
    assert fusion_for(FusionConfig(), ranking, analyse_query(query)).lexical_weight == (
        lexical_weight
    )
