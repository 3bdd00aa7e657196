"""Chunking of files without a grammar: line windows, Markdown first cut at its headings."""

from __future__ import annotations

import re

from codebase_mcp_search.adapters.treesitter._lines import LineBudget, Piece

_MD_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_MD_FENCE = re.compile(r" {0,3}(?:```|~~~)")


def text_pieces(budget: LineBudget, language: str | None) -> list[Piece]:
    """Line windows; Markdown is first cut at headings (outside fenced code)."""
    last = len(budget.lines) - 1
    sections = _markdown_sections(budget.lines) if language == "markdown" else [(0, last, None)]
    pieces: list[Piece] = []
    for start, end, title in sections:
        parts = budget.pack(start, end, (), max_lines=budget.window_lines)
        whole = len(parts) == 1
        pieces.extend(Piece(s, e, "text", title, mergeable=whole) for s, e in parts)
    return budget.merge_small(pieces)


def _markdown_sections(lines: list[str]) -> list[tuple[int, int, str | None]]:
    starts: list[tuple[int, str | None]] = [(0, None)]
    fenced = False
    for row, line in enumerate(lines):
        if _MD_FENCE.match(line):
            fenced = not fenced
        elif not fenced and _MD_HEADING.match(line):
            title = line.strip().lstrip("#").strip()[:200] or None
            if row == 0:
                starts[0] = (0, title)
            else:
                starts.append((row, title))
    ends = [row - 1 for row, _ in starts[1:]] + [len(lines) - 1]
    return [(row, end, title) for (row, title), end in zip(starts, ends, strict=True)]
