"""LineBudget's blank-row arithmetic against a plain scan of the rows."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter._lines import LineBudget

ROWS = st.lists(st.sampled_from(["", " ", "\t \x0c", "x", "  y = 1", "}", "end", "\u2028"]))
ROW = st.integers(-3, 12)


def budget(lines: list[str]) -> LineBudget:
    return LineBudget(
        lines, TiktokenCounter(), max_tokens=64, min_tokens=8, overlap_lines=2, window_lines=6
    )


@given(lines=ROWS, row=ROW)
def test_next_and_previous_nonblank_rows(lines: list[str], row: int) -> None:
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    b = budget(lines)
    assert b.next_nonblank(row) == next((i for i in nonblank if i >= row), len(lines))
    if row < len(lines):
        assert b.prev_nonblank(row) == max((i for i in nonblank if i <= row), default=-1)


@given(lines=ROWS, start=ROW, end=ROW)
def test_trim_drops_blank_rows_at_both_ends(lines: list[str], start: int, end: int) -> None:
    inside = [i for i in range(max(start, 0), min(end, len(lines) - 1) + 1) if lines[i].strip()]
    expected = (inside[0], inside[-1]) if inside else None
    assert budget(lines).trim(start, end) == expected


@given(lines=ROWS, start=st.integers(0, 8), end=st.integers(0, 8))
def test_trivial_rows_hold_only_closers_or_nothing(lines: list[str], start: int, end: int) -> None:
    closer = re.compile(r"[\W_]*(?:end|endif|fi|done|esac)?[\W_]*")
    expected = all(
        not line.strip() or closer.fullmatch(line.strip()) for line in lines[start : end + 1]
    )
    assert budget(lines).is_trivial(start, end) == expected


def test_content_is_the_rows_joined_and_counted() -> None:
    b = budget(["def f():", "", "    return 1"])
    assert b.content(0, 2) == "def f():\n\n    return 1"
    assert b.tokens(0, 2) == TiktokenCounter().count("def f():\n\n    return 1")
