"""The ranking stack (core.ranking): query understanding, definitions, path roles,
and properties of the re-ranking."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core.models import Chunk, ScoredChunk, last_name, symbol_names
from codebase_mcp_search.core.ranking import (
    QueryKind,
    QueryProfile,
    RankingConfig,
    analyse_query,
    rerank,
)
from codebase_mcp_search.core.ranking.definitions import defines
from codebase_mcp_search.core.ranking.path_words import (
    named_after_query,
    path_share,
    path_word_weights,
    query_word_forms,
    stem_boost_share,
)
from codebase_mcp_search.core.ranking.paths import (
    FileRole,
    file_role,
    normalise_name,
    stem_names,
    superseded,
)
from codebase_mcp_search.core.ranking.rerank import ceiling, diversify, referenced_files


def chunk(
    path: str, content: str, symbol: str | None = None, line: int = 1, repo: str = "r"
) -> Chunk:
    n = content.count("\n")
    return Chunk(
        id=f"{repo}:{path}:{line}",
        repository_id=repo,
        file_path=path,
        language=None,
        symbol=symbol,
        start_line=line,
        end_line=line + n,
        content=content,
        content_hash=f"{path}:{line}",
        token_count=len(content.split()),
    )


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("HTTPAdapter", ("HTTPAdapter",)),
        ("field_validator", ("field_validator",)),
        ("Sinatra::Base", ("Base", "Sinatra::Base")),
        ("a.b", ("b", "a.b")),
        ("uv_loop_init()", ("uv_loop_init",)),
        ("Observable", ("Observable",)),
        ("_private", ("_private",)),
        ("getUserName", ("getUserName",)),
    ],
)
def test_identifier_queries_are_symbol_queries(query: str, names: tuple[str, ...]) -> None:
    profile = analyse_query(query)
    assert profile.kind is QueryKind.SYMBOL
    assert profile.names == names


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("router", ()),
        ("parse the config file", ()),
        ("how does JsonReader handle lenient mode", ("JsonReader",)),
        ("where is `field_validator` applied to a model?", ("field_validator",)),
        ("Sinatra::Base routes and the Rack stack", ("Base",)),
        ("Cache eviction policy", ()),
    ],
)
def test_sentences_are_natural_language_with_their_identifiers(
    query: str, names: tuple[str, ...]
) -> None:
    profile = analyse_query(query)
    assert profile.kind is QueryKind.NATURAL
    assert profile.names == names


def test_names_and_symbols_share_one_rule() -> None:
    assert last_name("Sinatra::Base") == "Base"
    assert last_name("Foo#empty?") == "empty"
    assert last_name("a.b()") == "b"
    assert last_name("Obj->method") == "method"
    assert symbol_names("pkg.JsonReader, helper_fn") == ["JsonReader", "helper_fn"]
    assert symbol_names(None) == symbol_names("") == []


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("def field_validator(*fields):\n    ...", "field_validator"),
        ("class JsonReader(Closeable) {", "JsonReader"),
        ("func (engine *Engine) Use(middleware ...HandlerFunc) IRoutes {", "Use"),
        ("pub trait Visitor<'de>: Sized {", "Visitor"),
        ("defmodule Phoenix.Router do", "Router"),
        ("local function setup(opts)", "setup"),
        ("function M.setup(config)", "setup"),
        ("export const object = <T>(shape: T) => {", "object"),
        ("  sealed class Result<out T> {", "Result"),
        ("type HandlerFunc func(*Context)", "HandlerFunc"),
        ("// Reads JSON.\n@Deprecated\nclass JsonReader {", "JsonReader"),
        ("x = 1\nfn main() {}", "main"),
    ],
)
def test_definition_keywords_before_the_name(content: str, name: str) -> None:
    assert defines(chunk("f.x", content), name)


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("reader = JsonReader(stream)", "JsonReader"),
        ("return new JsonReader(in);", "JsonReader"),
        ("class JsonReaderTest {", "JsonReader"),
        ("def setup_logging():", "setup"),
        ("class jsonreader:", "JsonReader"),
    ],
)
def test_uses_are_not_definitions(content: str, name: str) -> None:
    assert not defines(chunk("f.x", content), name)


def test_the_chunk_symbol_counts_as_a_definition() -> None:
    method = chunk("Reader.java", "public int peek() { return a; }", symbol="JsonReader.peek")
    assert defines(method, "peek")
    assert defines(method, "JsonReader.peek")
    assert not defines(method, "JsonReader")


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("src/router.py", FileRole.SOURCE),
        ("tests/test_router.py", FileRole.TEST),
        ("pkg/router_test.go", FileRole.TEST),
        ("src/test/java/JsonReaderTest.java", FileRole.TEST),
        ("lib/parser.spec.ts", FileRole.TEST),
        ("examples/basic/main.go", FileRole.EXAMPLE),
        ("docs_src/tutorial001.py", FileRole.EXAMPLE),
        ("README.md", FileRole.DOC),
        ("docs/guide/index.rst", FileRole.DOC),
        ("src/_compat.py", FileRole.COMPAT),
        ("v3/legacy/errors.ts", FileRole.COMPAT),
        ("single_include/nlohmann/json.hpp", FileRole.GENERATED),
        ("api/service.pb.go", FileRole.GENERATED),
        ("types/index.d.ts", FileRole.STUB),
        ("Contest.java", FileRole.SOURCE),
        # xUnit names a test class in UpperCamelCase; a lowerCamel module is named after
        # the function it holds (a test runner's own source: jest-runner's runTest.ts).
        ("packages/jest-runner/src/runTest.ts", FileRole.SOURCE),
        ("src/node/collectTests.ts", FileRole.SOURCE),
        ("src/runSuite.js", FileRole.SOURCE),
        ("Tests/CoreTests/ParserTests.swift", FileRole.TEST),
        ("core/src/test/scala/cats/tests/EqSuite.scala", FileRole.TEST),
        ("modules/JsonSpec.scala", FileRole.TEST),
        ("latest.py", FileRole.SOURCE),
    ],
)
def test_file_roles(path: str, role: FileRole) -> None:
    assert file_role(path) is role


def test_a_barrel_is_told_by_its_content() -> None:
    reexports = "from .a import A\nfrom .b import B\n__all__ = ['A', 'B']"
    assert file_role("pkg/__init__.py", reexports) is FileRole.BARREL
    assert file_role("pkg/__init__.py", "def setup():\n    return 1") is FileRole.SOURCE
    assert file_role("src/index.ts", "export * from './a';\nexport { b } from './b';") is (
        FileRole.BARREL
    )


def test_stem_names() -> None:
    assert "jsonreader" in stem_names("a/JsonReader.java")
    assert "jsonreader" in stem_names("a/json_reader.py")
    assert "validator" in stem_names("validators.py")


def test_the_definition_ranks_above_its_uses() -> None:
    uses = [
        ScoredChunk(chunk=chunk(f"test/t{i}_test.py", f"r = JsonReader()\nr.peek({i})"), score=0.9)
        for i in range(3)
    ]
    use_in_source = ScoredChunk(chunk=chunk("src/app.py", "r = JsonReader(x)\nreturn r"), score=0.8)
    definition = chunk(
        "src/json_reader.py", "class JsonReader:\n    '''Reads JSON.'''", "JsonReader"
    )
    ranked = rerank(
        [*uses, use_in_source], analyse_query("JsonReader"), RankingConfig(), [definition]
    )
    assert ranked[0].chunk == definition
    assert ranked[1].chunk == use_in_source.chunk


def test_a_query_about_tests_keeps_them() -> None:
    test = ScoredChunk(
        chunk=chunk("tests/test_auth.py", "def test_login(client):\n    ..."), score=1.0
    )
    src = ScoredChunk(chunk=chunk("src/auth.py", "def login(user, password):\n    ..."), score=0.8)
    config = RankingConfig(path_boost=0.0, coherence_boost=0.0)
    assert rerank([test, src], analyse_query("login flow"), config)[0].chunk == src.chunk
    assert rerank([test, src], analyse_query("login tests"), config)[0].chunk == test.chunk


# --- properties ----------------------------------------------------------------------------

_PATHS = ["src/a.py", "src/b.py", "tests/test_a.py", "docs/a.md", "lib/c.go", "README.md"]
_TEXTS = [
    "def parse(text):\n    return json.loads(text)",
    "class Parser:\n    def feed(self, data):\n        pass",
    "x = Parser()\nx.feed(parse(text))",
    "# Parser",
    "}",
    "func Parse(s string) (Node, error) {\n    return nil, nil\n}",
]


@st.composite
def candidates(draw: st.DrawFn, paths: list[str] | None = None) -> list[ScoredChunk]:
    n = draw(st.integers(min_value=0, max_value=12))
    out: list[ScoredChunk] = []
    for i in range(n):
        c = chunk(
            draw(st.sampled_from(paths or _PATHS)),
            draw(st.sampled_from(_TEXTS)),
            draw(st.sampled_from([None, "Parser", "parse", "Parser.feed"])),
            line=i * 10 + 1,
        )
        out.append(ScoredChunk(chunk=c, score=draw(st.floats(min_value=0.0, max_value=1.0))))
    return out


_QUERIES = st.sampled_from(["Parser", "parse", "how is text parsed", "parser tests", "feed"])


@settings(max_examples=150, deadline=None)
@given(cands=candidates(), query=_QUERIES)
def test_rerank_keeps_every_candidate_once_with_scores_in_range(
    cands: list[ScoredChunk], query: str
) -> None:
    ranked = rerank(cands, analyse_query(query), RankingConfig())
    assert sorted(s.chunk.id for s in ranked) == sorted(s.chunk.id for s in cands)
    assert all(0.0 <= s.score <= 1.0 for s in ranked)
    assert [s.score for s in ranked] == sorted((s.score for s in ranked), reverse=True)


@settings(max_examples=150, deadline=None)
@given(cands=candidates(), query=_QUERIES, seed=st.integers(0, 1000))
def test_rerank_does_not_depend_on_input_order(
    cands: list[ScoredChunk], query: str, seed: int
) -> None:
    shuffled = list(cands)
    random.Random(seed).shuffle(shuffled)
    profile = analyse_query(query)
    assert rerank(cands, profile, RankingConfig()) == rerank(shuffled, profile, RankingConfig())


@settings(max_examples=150, deadline=None)
@given(cands=candidates(), query=_QUERIES)
def test_a_penalty_never_lifts_a_chunk(cands: list[ScoredChunk], query: str) -> None:
    profile = analyse_query(query)
    # Without the per-file decay, which depends on the order within a file.
    with_priors = rerank(cands, profile, RankingConfig(file_decay=1.0))
    without = {
        s.chunk.id: s.score
        for s in rerank(cands, profile, RankingConfig(file_decay=1.0, priors=False))
    }
    assert all(s.score <= without[s.chunk.id] + 1e-12 for s in with_priors)


@settings(max_examples=150, deadline=None)
@given(cands=candidates(), query=_QUERIES)
def test_a_definition_boost_never_lowers_a_chunk(cands: list[ScoredChunk], query: str) -> None:
    profile = analyse_query(query)
    config = RankingConfig(file_decay=1.0)
    plain_config = RankingConfig(file_decay=1.0, definition_boost=0.0)
    boosted = {s.chunk.id: s.score for s in rerank(cands, profile, config)}
    # Scores are divided by the ceiling, which the boost raises: compare before dividing.
    scale = ceiling(plain_config) / ceiling(config)
    for s in rerank(cands, profile, plain_config):
        assert boosted[s.chunk.id] >= s.score * scale - 1e-12


@settings(max_examples=200, deadline=None)
@given(
    cands=candidates(),
    decay=st.floats(min_value=0.05, max_value=1.0),
    free=st.integers(min_value=1, max_value=3),
)
def test_diversity_never_drops_a_files_best_chunk_below_another_files_lesser_one(
    cands: list[ScoredChunk], decay: float, free: int
) -> None:
    out = diversify(cands, decay, free)
    position = {s.chunk.id: i for i, s in enumerate(out)}
    best: dict[str, ScoredChunk] = {}
    for s in sorted(cands, key=lambda s: (-s.score, s.chunk.file_path, s.chunk.start_line)):
        best.setdefault(s.chunk.file_path, s)
    for f, top in best.items():
        for s in cands:
            if s.chunk.file_path != f and s.score < top.score:
                assert position[top.chunk.id] < position[s.chunk.id]
    assert {
        s.chunk.id: s.score for s in out if s.chunk.id in {b.chunk.id for b in best.values()}
    } == {b.chunk.id: b.score for b in best.values()}


def test_a_files_free_chunks_keep_their_scores_and_the_rest_decay() -> None:
    cands = [
        ScoredChunk(chunk=chunk("a.py", f"def f{i}(): pass", line=i * 10 + 1), score=1.0 - i / 10)
        for i in range(4)
    ]
    scores = [s.score for s in diversify(cands, 0.5, free=2)]
    assert scores == pytest.approx([1.0, 0.9, 0.8 * 0.5, 0.7 * 0.25])


@pytest.mark.parametrize(
    ("content", "trivial"),
    [
        ("}", True),
        ("# Parser", True),
        ('<a name="top"></a>', True),
        ("def parse(text):\n    return json.loads(text)", False),
        (" " * 300 + "}", True),
        (" " * 300 + "def parse(text):\n    return json.loads(text)", False),
    ],
)
def test_trivial_chunks(content: str, trivial: bool) -> None:
    from codebase_mcp_search.core.ranking.rerank import is_trivial

    assert is_trivial(content) is trivial


# --- a file named after a word of the question ---------------------------------------------


@pytest.mark.parametrize(
    ("query", "path", "named"),
    [
        ("how the Functor type class defines mapping", "core/cats/Functor.scala", True),
        ("JSON parser and tokenizer", "detail/input/parser.hpp", True),
        ("how from_json populates a custom type", "conversions/from_json.hpp", True),
        ("how expressions are composed", "core/Expression.kt", True),
        ("how validators are plugged in", "binding/validator.go", True),
        ("thread pool and work queue", "src/threadpool.c", True),
        ("generating model cards for publication", "modelcards/model_cards.py", True),
        ("the pool of the thread", "src/threadpool.c", False),
        ("how Observable represents events", "ObservableType.swift", False),
        ("how the router is created", "src/routing.py", True),
        ("how the router is created", "src/route_table.py", False),
        ("how the router is created", "src/the.py", False),
    ],
)
def test_a_file_named_after_a_query_word(query: str, path: str, named: bool) -> None:
    assert named_after_query(query_word_forms(analyse_query(query)), path) is named


def test_the_stem_boost_counts_in_part_for_a_long_question() -> None:
    short = analyse_query("how the router is created")
    long = analyse_query(
        "walk up from the given paths looking for config files and note the ignored"
    )
    assert stem_boost_share(short, 4) == 1.0
    assert 0.0 < stem_boost_share(long, 4) < 1.0
    assert stem_boost_share(long, 0) == 1.0


def test_a_file_named_after_the_topic_ranks_first() -> None:
    other = ScoredChunk(chunk=chunk("src/app.py", "def make_router():\n    ..."), score=1.0)
    named = ScoredChunk(chunk=chunk("src/router.py", "class Router:\n    ..."), score=0.8)
    query = analyse_query("how a router is created")
    config = RankingConfig(path_boost=0.0, coherence_boost=0.0)
    assert rerank([other, named], query, config)[0].chunk == named.chunk
    off = config.model_copy(update={"stem_boost": 0.0})
    assert rerank([other, named], query, off)[0].chunk == other.chunk
    # A name asked for alone is the definitions' business, not the file name's: the boost
    # adds nothing to a symbol query.
    symbol = analyse_query("make_router")
    on_ids = [s.chunk.id for s in rerank([other, named], symbol, config)]
    assert on_ids == [s.chunk.id for s in rerank([other, named], symbol, off)]
    assert on_ids[0] == other.chunk.id


def test_a_word_in_every_candidate_path_weighs_less_in_the_path_share() -> None:
    files = ["json.hpp", "detail/json_sax.hpp", "conversions/from_json.hpp", "input/parser.hpp"]
    query = analyse_query("JSON parser and tokenizer")
    weights = path_word_weights(query, files, floor=0.0)
    assert weights["json"] < weights["parser"] == weights["tokenizer"] == 1.0
    # Unweighted, the library's own name counts as much as the subject: a tie.
    assert path_share(query, "json.hpp") == path_share(query, "input/parser.hpp")
    assert path_share(query, "json.hpp", weights) < path_share(query, "input/parser.hpp", weights)


_PATH_POOL = ["src/json.py", "src/json_parser.py", "lib/parser.go", "docs/guide.md", "a/b/c.rs"]
_PATH_QUERIES = st.sampled_from(
    ["json parser", "how the parser reads json", "guide to parsing", "tokenizer", "the a"]
)


@settings(max_examples=150, deadline=None)
@given(
    files=st.lists(st.sampled_from(_PATH_POOL), unique=True, max_size=5),
    query=_PATH_QUERIES,
    floor=st.floats(min_value=0.0, max_value=1.0),
)
def test_path_word_weights_stay_between_the_floor_and_one(
    files: list[str], query: str, floor: float
) -> None:
    profile = analyse_query(query)
    weights = path_word_weights(profile, files, floor)
    assert all(floor - 1e-9 <= w <= 1.0 + 1e-9 for w in weights.values())
    for path in _PATH_POOL:
        assert 0.0 <= path_share(profile, path, weights) <= 1.0 + 1e-9
    # A floor of 1 weighs every word alike: the plain share.
    assert path_word_weights(profile, files, 1.0) == {}


@settings(max_examples=150, deadline=None)
@given(files=st.lists(st.sampled_from(_PATH_POOL), unique=True, max_size=5), query=_PATH_QUERIES)
def test_a_word_in_fewer_candidate_paths_never_weighs_less(files: list[str], query: str) -> None:
    profile = analyse_query(query)
    weights = path_word_weights(profile, files, 0.0)

    def holders(word: str) -> int:
        return sum(1 for f in files if path_share(analyse_query(word), f) > 0)

    for a in weights:
        for b in weights:
            if holders(a) < holders(b):
                assert weights[a] >= weights[b]


@settings(max_examples=150, deadline=None)
@given(cands=candidates())
def test_a_looked_up_definition_outranks_every_candidate_defining_nothing(
    cands: list[ScoredChunk],
) -> None:
    found = chunk("src/defs.py", 'class Parser:\n    """Reads tokens."""', "Parser", line=1000)
    profile = analyse_query("Parser")
    ranked = rerank(cands, profile, RankingConfig(), [found])
    score = {s.chunk.id: s.score for s in ranked}
    for s in cands:
        if not defines(s.chunk, "Parser"):
            assert score[found.id] > score[s.chunk.id]


def test_an_old_version_beside_a_newer_one_is_a_compatibility_copy() -> None:
    files = [
        "packages/zod/src/v3/types.ts",
        "packages/zod/src/v4/core/schemas.ts",
        "packages/zod/src/v4/classic/schemas.ts",
        "org/jetbrains/exposed/v1/core/Column.kt",  # a version alone: the current one
        "api/v1/users.py",  # another parent's versions are compared apart
        "api/v2/users.py",
    ]
    assert superseded(files, set()) == {"packages/zod/src/v3/types.ts", "api/v1/users.py"}
    # A question naming the old version asks for it.
    assert superseded(files, {"v3", "errors"}) == {"api/v1/users.py"}
    # In the ranking: the old version's chunk falls below the new one's equal chunk.
    body = "export function parse(input) {\n  return check(input)\n}"
    old = chunk("packages/zod/src/v3/types.ts", body)
    new = chunk("packages/zod/src/v4/core/schemas.ts", body)
    pair = [ScoredChunk(old, 1.0), ScoredChunk(new, 0.9)]
    on = RankingConfig(path_boost=0.0, stem_boost=0.0)
    ranked = rerank(pair, analyse_query("how input is parsed"), on)
    assert [s.chunk.file_path for s in ranked] == [new.file_path, old.file_path]
    off = on.model_copy(update={"older_versions": False})
    assert (
        rerank(pair, analyse_query("how input is parsed"), off)[0].chunk.file_path == old.file_path
    )
    # Named, the old version keeps its place.
    assert (
        rerank(pair, analyse_query("how v3 parsed input"), on)[0].chunk.file_path == old.file_path
    )


@given(
    versions=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=5),
    asked=st.sets(st.sampled_from(["v0", "v1", "v2", "v3", "parse"])),
)
def test_only_older_versions_are_superseded(versions: list[int], asked: set[str]) -> None:
    files = [f"src/v{n}/mod.py" for n in versions]
    found = superseded(files, asked)
    newest = max(versions)
    assert all(int(f.split("/")[1][1:]) < newest for f in found)
    assert f"src/v{newest}/mod.py" not in found
    assert found == {f for f in files if int(f.split("/")[1][1:]) < newest} - {
        f"src/{a}/mod.py" for a in asked
    }


def test_a_short_question_lifts_the_files_the_best_file_names() -> None:
    # The best file extends ``Apply``: Apply.scala rises above an equal unrelated file.
    top = chunk("cats/Applicative.scala", "trait Applicative[F[_]] extends Apply[F] {\n}")
    named = chunk("cats/Apply.scala", "trait Apply[F[_]] extends Functor[F] {\n}")
    other = chunk("cats/Monoid.scala", "trait Monoid[A] extends Semigroup[A] {\n}")
    entry = chunk("cats/mod.rs", "pub mod applicative;\npub fn x() {}")
    cands = [
        ScoredChunk(top, 1.0),
        ScoredChunk(other, 0.5),
        ScoredChunk(named, 0.45),
        ScoredChunk(entry, 0.4),
    ]
    scores = {s.chunk.id: s.score for s in cands}
    assert referenced_files([top, named, other, entry], scores) == {"cats/Apply.scala"}
    off = RankingConfig(path_boost=0.0, stem_boost=0.0, reference_boost=0.0)
    on = off.model_copy(update={"reference_boost": 0.2, "reference_max_words": 8})
    query = analyse_query("how effects combine")

    def order(config: RankingConfig, q: QueryProfile = query) -> list[str]:
        return [s.chunk.file_path for s in rerank(cands, q, config)]

    assert order(off)[:3] == ["cats/Applicative.scala", "cats/Monoid.scala", "cats/Apply.scala"]
    assert order(on)[:3] == ["cats/Applicative.scala", "cats/Apply.scala", "cats/Monoid.scala"]
    # A long question describes one function: no lift.
    long_q = analyse_query(
        "combine two independent effects into one pair keeping both results apart"
    )
    assert order(on, long_q) == order(off, long_q)
    # Scores stay within [0, 1]; the default lifts as ``on`` does.
    assert all(0.0 <= s.score <= 1.0 for s in rerank(cands, query, on))
    assert RankingConfig().reference_boost > 0
    default = off.model_copy(update={"reference_boost": RankingConfig().reference_boost})
    assert order(default)[:3] == order(on)[:3]


def _mentioned(cands: list[ScoredChunk]) -> set[str]:
    """The candidate files some candidate's text names (a superset of what the best names)."""
    words = {
        normalise_name(w) for s in cands for w in re.findall(r"[A-Za-z_][\w-]*", s.chunk.content)
    }
    return {s.chunk.file_path for s in cands if words & set(stem_names(s.chunk.file_path))}


_NAMED_PATHS = ["src/parser.py", "src/json.py", "src/feed.py", "lib/node.go", "src/other.py"]


@settings(max_examples=200, deadline=None)
@given(
    cands=candidates(_NAMED_PATHS),
    query=st.sampled_from(["how is text parsed", "parse the feed"]),
)
def test_the_reference_boost_only_ever_lifts_named_files(
    cands: list[ScoredChunk], query: str
) -> None:
    """With the boost, chunks of files no candidate names keep their order among themselves,
    and a named file's best chunk never falls below a chunk of an unnamed file it was above.
    (A named file's other chunks may: the boost can make another of its chunks the best, and
    the one it displaces then takes the file decay.)"""
    profile = analyse_query(query)
    off = RankingConfig(reference_boost=0.0)
    on = off.model_copy(update={"reference_boost": 0.3})
    before = [s.chunk for s in rerank(cands, profile, off)]
    after = [s.chunk for s in rerank(cands, profile, on)]
    named = _mentioned(cands)
    at = {c.id: i for i, c in enumerate(after)}

    def best_at(chunks: list[Chunk], path: str) -> int:
        return next(i for i, c in enumerate(chunks) if c.file_path == path)

    for i, x in enumerate(before):
        for y in before[i + 1 :]:
            if y.file_path in named:
                continue
            if x.file_path not in named:
                assert at[x.id] < at[y.id]
            elif best_at(before, x.file_path) == i:
                assert best_at(after, x.file_path) < at[y.id]
