"""Which query word a file is named after (core.ranking.naming) and what the stem
boost then adds: by the word's position in the question, and through abbreviated names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.core.models import Chunk, ScoredChunk
from codebase_mcp_search.core.ranking import RankingConfig, analyse_query, rerank
from codebase_mcp_search.core.ranking.naming import abbreviates, position_share, word_positions
from codebase_mcp_search.core.ranking.path_words import stem, stem_gains

DEFAULT = RankingConfig()
BY_LENGTH = RankingConfig(stem_boost_position=0, stem_abbreviation=0)


def chunk(path: str) -> Chunk:
    return Chunk(
        id=f"r:{path}",
        repository_id="r",
        file_path=path,
        language=None,
        start_line=1,
        end_line=2,
        content="def f():\n    return 1",
        content_hash=path,
        token_count=4,
    )


def gain(query: str, path: str, config: RankingConfig = DEFAULT) -> float:
    return stem_gains(analyse_query(query), config, [path]).get(path, 0.0)


def test_the_subject_of_the_question_names_the_file_more_than_its_scene() -> None:
    query = "how middleware chains context transformations between procedures"
    subject, scene = "src/middleware.ts", "src/procedure.ts"
    assert gain(query, subject) == DEFAULT.stem_boost
    assert 0.0 < gain(query, scene) < gain(query, subject)
    # By the question's length alone, both get the same part.
    assert gain(query, subject, BY_LENGTH) == gain(query, scene, BY_LENGTH) > 0.0
    # In the ranking: two chunks scoring alike, the subject's file first, whatever the order.
    a, b = ScoredChunk(chunk(scene), 1.0), ScoredChunk(chunk(subject), 1.0)
    config = DEFAULT.model_copy(update={"path_boost": 0.0})
    for pair in ([a, b], [b, a]):
        assert rerank(pair, analyse_query(query), config)[0].chunk.file_path == subject


def test_word_positions_count_content_words_only() -> None:
    single, pairs = word_positions(analyse_query("how the Functor type class maps"), stem)
    assert (single[stem("functor")], single[stem("type")], single[stem("maps")]) == (0, 1, 3)
    assert pairs[stem("functortype")] == 0 and pairs[stem("typeclass")] == 1
    assert "the" not in single and "how" not in single


def test_an_abbreviated_file_name_is_named_after_the_word_it_shortens() -> None:
    assert abbreviates("impl", "implementation", 4)
    assert abbreviates("util", "utility", 4)
    assert not abbreviates("map", "mapping", 4)  # too short to tell
    assert not abbreviates("pars", "parse", 4)  # not shorter by enough
    assert not abbreviates("form", "reform", 4)
    query = "standard library type Serialize implementations"
    assert gain(query, "ser/impls.rs") > 0
    assert gain(query, "ser/impls.rs", DEFAULT.model_copy(update={"stem_abbreviation": 0})) == 0
    # Two words run together are matched whole, never abbreviated: Func.scala is not named
    # after "Functor type".
    assert gain("Functor type class", "cats/Func.scala") == 0


_QUERIES = st.sampled_from(
    [
        "how middleware chains context transformations between procedures",
        "form data binding for URL-encoded requests",
        "utility helpers for path detection",
        "how from_json populates a custom type from JSON",
        "standard library type Serialize implementations",
        "thread pool work queue",
        "the a of",
    ]
)
_PATHS = st.sampled_from(
    ["src/middleware.ts", "binding/form.go", "utils.go", "lib/main.rb", "json.hpp",
     "conversions/from_json.hpp", "ser/impls.rs", "src/procedure.ts", "threadpool.c"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    query=_QUERIES,
    path=_PATHS,
    k=st.integers(min_value=0, max_value=5),
    least=st.sampled_from([0, 4, 5]),
)
def test_the_stem_gain_stays_within_the_boost(query: str, path: str, k: int, least: int) -> None:
    config = RankingConfig(stem_boost_position=k, stem_abbreviation=least)
    assert 0.0 <= gain(query, path, config) <= config.stem_boost
    # Abbreviations only add files: a file named after a word stays named after it.
    plain = config.model_copy(update={"stem_abbreviation": 0})
    assert gain(query, path, config) >= gain(query, path, plain)
    # Position only weighs a file already named after a word; it never names one.
    other_k = config.model_copy(update={"stem_boost_position": 1 if k != 1 else 3})
    assert (gain(query, path, config) > 0) == (gain(query, path, other_k) > 0)


@given(full=st.integers(min_value=1, max_value=6), at=st.integers(min_value=0, max_value=20))
def test_a_later_word_never_gets_more_of_the_boost(full: int, at: int) -> None:
    assert 0.0 < position_share(at + 1, full) <= position_share(at, full) <= 1.0
    assert position_share(min(at, full - 1), full) == 1.0
