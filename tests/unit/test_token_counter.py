"""TiktokenCounter counts a text line by line (each line once per process): the sum must be
exactly tiktoken's count of the whole text, whatever the text (the counts are stored with the
chunks, and a chunk's budget is checked against them)."""

from __future__ import annotations

import pickle

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.tokens.tiktoken_counter import OFFLINE_ENCODING

WHOLE = tiktoken.get_encoding(OFFLINE_ENCODING)

# What decides cl100k's pieces near a line's end: newlines of both kinds, spaces and tabs, other
# whitespace (Unicode's and Python's differ), letters, digits, punctuation, contractions.
PARTS = [
    "\n", "\r", "\r\n", "\n\n", " ", "  ", "\t", "\v", "\f", "\x1c", "\x85", "\u00a0",
    "\u2028", "\u3000", "a", "Zq", "é", "日本", "1", "1234", ";", "{", "}", "//", "'s", "'",
    "-", "_", "x = 1", "<|endoftext|>", "\U0001f600",
]  # fmt: skip


def _whole(text: str) -> int:
    return len(WHOLE.encode_ordinary(text))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=40))
def test_count_is_tiktokens_count_of_the_whole_text(parts: list[str]) -> None:
    text = "".join(parts)
    counter = TiktokenCounter()
    assert counter.count(text) == _whole(text)
    assert counter.count(text) == _whole(text)  # its lines remembered


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_count_of_any_text(text: str) -> None:
    assert TiktokenCounter().count(text) == _whole(text)


def test_source_lines_repeated_across_texts() -> None:
    counter = pickle.loads(pickle.dumps(TiktokenCounter()))  # as a worker process gets it
    body = "def f(x):\n    if x:\n        return x  \n\n    \n    return None\n}\n"
    for text in (body, body * 3, "class A:\n" + body, body.rstrip("\n"), "\n" + body):
        assert counter.count(text) == _whole(text)
