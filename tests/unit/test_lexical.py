"""The code-aware analyser and BM25 helpers."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.models import split_lines


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getUserName", ["getusername", "get", "user", "name"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("parse_json_file", ["parse", "json", "file"]),
        ("base64Encode", ["base64encode", "base", "64", "encode"]),
        ("how to read a file in Python", ["read", "file", "python"]),
        ("classes queries", ["classe", "query"]),
        ("x = y + 1", []),
    ],
)
def test_analyse(text: str, expected: list[str]) -> None:
    assert lexical.analyse(text) == expected


def test_query_terms_are_distinct_in_order() -> None:
    assert lexical.query_terms("parse config, parse JSON config") == ["parse", "config", "json"]


def test_language_names_are_dropped_from_queries_unless_alone() -> None:
    assert lexical.query_terms("python read file lines") == ["read", "file", "line"]
    assert lexical.query_terms("Python") == ["python"]


def test_symbol_counts_beside_the_content_as_its_field_weighs() -> None:
    terms = lexical.document_terms("def load(path): ...", "a.py", "load")
    assert terms["load"] == 1 + lexical.FIELDS.symbol
    assert lexical.document_terms("def load(): ...", "a.py", "load", _FLAT)["load"] == 2


def test_document_terms_include_the_path_as_its_field_weighs() -> None:
    terms = lexical.document_terms("x = 1", "src/authLogin.py")
    w = lexical.FIELDS.path
    assert (terms["auth"], terms["login"], terms["src"]) == (w, w, w)


# Version 1 of the analyser: content, path and symbol once each, no doc comment field.
_FLAT = lexical.Fields(path=1, symbol=1, doc=0)


def test_today_s_fields_weigh_paths_symbols_and_doc_comments() -> None:
    # Fitted by bench/lexical_fields.py (bench/README.md, round four).
    assert lexical.Fields(path=2, symbol=2, doc=1) == lexical.FIELDS
    assert lexical.ANALYSER_VERSION == 4


@pytest.mark.parametrize(
    "content",
    [
        'def retry(n):\n    """Retry the request with backoff."""\n    return n',
        "/** Retry the request with backoff. */\nint retry(int n) { return n; }",
        "/// Retry the request with backoff.\nfn retry(n: u32) -> u32 { n }",
        "--- Retry the request with backoff.\nlocal function retry(n) return n end",
        "(** Retry the request with backoff. *)\nlet retry n = n",
        "{-| Retry the request with backoff. -}\nretry :: Int -> Int",
        "-- | Retry the request with backoff.\nretry n = n",
        "#' Retry the request with backoff.\nretry <- function(n) n",
        "%% @doc Retry the request with backoff.\nretry(N) -> N.",
    ],
)
def test_doc_comments_count_once_more(content: str) -> None:
    terms = lexical.document_terms(content, "a.x", None, lexical.Fields(path=1, symbol=1, doc=1))
    assert (terms["backoff"], terms["request"]) == (2, 2)


@pytest.mark.parametrize(
    "content",
    [
        "# Retry the request with backoff.\ndef retry(n): return n",
        "// Retry the request with backoff.\nfunc retry(n int) int { return n }",
        "/* Retry the request with backoff. */\nint retry(int n) { return n; }",
        # A C pointer dereferenced twice is no OCaml doc comment, even before a cast's ``*)``.
        "int retry(char **p) { return (**p) + backoff((char*) request); }",
        "%% Retry the request with backoff.\nretry(N) -> N.",
    ],
)
def test_plain_comments_count_as_content_only(content: str) -> None:
    terms = lexical.document_terms(content, "a.x", None, lexical.Fields(path=1, symbol=1, doc=3))
    assert terms["backoff"] == 1


_weights = st.integers(min_value=0, max_value=3)
_code = st.text(alphabet=st.sampled_from(list("ab_Z/*-'\" \n#def")), max_size=80)


@given(
    content=_code,
    path=st.sampled_from(["a.py", "src/authLogin.ts", "lib/x_y.rs"]),
    symbol=st.one_of(st.none(), st.sampled_from(["load", "Foo.barBaz"])),
    low=st.tuples(_weights, _weights, _weights),
    more=st.tuples(_weights, _weights, _weights),
)
def test_raising_a_field_weight_never_lowers_a_term(
    content: str,
    path: str,
    symbol: str | None,
    low: tuple[int, int, int],
    more: tuple[int, int, int],
) -> None:
    high = tuple(a + b for a, b in zip(low, more, strict=True))
    lo = lexical.document_terms(content, path, symbol, lexical.Fields(*low))
    hi = lexical.document_terms(content, path, symbol, lexical.Fields(*high))
    content_terms = Counter(lexical.analyse(content))
    assert all(hi[t] >= tf for t, tf in lo.items())
    # The content always counts once; each field adds only its own terms; doc comments are
    # part of the content, so they add no term the content lacks.
    assert all(lo[t] >= tf for t, tf in content_terms.items())
    fields = set(lexical.analyse(path)) | set(lexical.analyse(symbol or ""))
    assert set(hi) <= set(content_terms) | fields
    # Version 1's document is the flat weighting.
    if low == (1, 1, 0):
        flat = Counter(content_terms)
        flat.update(lexical.analyse(path))
        flat.update(lexical.analyse(symbol or ""))
        assert lo == +flat


@given(st.text(alphabet=st.sampled_from(list("\"'/*-!\nab ()|{}^#%@doc")), max_size=120))
def test_doc_comments_are_what_the_expression_finds(content: str) -> None:
    assert lexical.doc_comments(content) == lexical.DOC_COMMENT.findall(content)


@given(st.text())
def test_analyse_never_fails_and_yields_lowercase_terms(text: str) -> None:
    for term in lexical.analyse(text):
        assert term == term.lower() and len(term) > 1 and term.isalnum()


def words_analysed_one_by_one(text: str) -> list[str]:
    """The definition: words are the runs of ASCII letters and digits, analysed in order."""
    return [term for word in re.findall(r"[A-Za-z0-9]+", text) for term in lexical.analyse(word)]


@given(st.text())
@example("")
@example("getUser\ud800Name\udfff42 caf\u00e9Bar \u0663\u0664 \ufb01le x\u200by")
def test_analyse_splits_words_on_everything_but_ascii_letters_and_digits(text: str) -> None:
    assert lexical.analyse(text) == words_analysed_one_by_one(text)


def test_analyse_is_the_same_after_its_word_memo_fills(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "_WORD_CACHE", {})
    monkeypatch.setattr(lexical, "_WORD_CACHE_SIZE", 3)
    text = "getUserName parse_json HTTPServer base64Encode getUserName classes " * 3
    assert lexical.analyse(text) == words_analysed_one_by_one(text)
    assert len(lexical._WORD_CACHE) <= 3


@given(
    tf=st.integers(1, 50),
    doc_len=st.integers(1, 500),
    avg=st.floats(1, 500),
    df=st.integers(1, 1000),
    extra=st.integers(0, 1000),
)
def test_bm25_term_is_positive_and_below_its_bound(
    tf: int, doc_len: int, avg: float, df: int, extra: int
) -> None:
    w = lexical.idf(df + extra, df)
    score = lexical.term_score(tf, max(doc_len, tf), avg, w)
    assert score > 0
    # The normalised score can exceed the bound only for documents far shorter than average.
    if max(doc_len, tf) >= avg:
        assert lexical.normalised(score, lexical.upper_bound([w])) <= 1.0


@given(tf=st.integers(1, 20), doc_len=st.integers(20, 200), avg=st.floats(10, 100))
def test_bm25_grows_with_tf_and_shrinks_with_length(tf: int, doc_len: int, avg: float) -> None:
    w = lexical.idf(100, 5)
    assert lexical.term_score(tf + 1, doc_len, avg, w) > lexical.term_score(tf, doc_len, avg, w)
    assert lexical.term_score(tf, doc_len + 10, avg, w) < lexical.term_score(tf, doc_len, avg, w)


def test_rarer_terms_weigh_more() -> None:
    assert lexical.idf(1000, 2) > lexical.idf(1000, 200) > 0


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\r\nb\rc\n\n", ["a", "b", "c", ""]),
        ("a\x0cb\u2028c", ["a\x0cb\u2028c"]),
    ],
)
def test_split_lines_numbers_lines_like_editors(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines
