"""Line ranges of one file under a token budget: trimming, counting, packing, merging."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress

from codebase_mcp_search.core.ports import TokenCounter

_DEFINITION_KINDS = ("function", "method", "class")

# A merged chunk may exceed its shortest member by at most this many lines, so that a search
# hit on a small merged function still points at (nearly) that function alone.
MERGE_SLACK_LINES = 15

# Estimates scale a range's characters by the token density of the range being split; above
# this factor of the budget the real count is not worth asking for.
_ESTIMATE_SLACK = 1.25

_TRIVIAL = re.compile(r"[\W_]*(?:end|endif|fi|done|esac)?[\W_]*")


@dataclass(slots=True)
class Piece:
    """A chunk being built: 0-based inclusive rows, kind, symbol and whether it may merge."""

    start: int
    end: int
    kind: str
    symbol: str | None
    mergeable: bool = True
    shortest: int = 0

    def __post_init__(self) -> None:
        if not self.shortest:
            self.shortest = self.end - self.start + 1


class LineBudget:
    """The lines of one file and the token arithmetic over their ranges.

    Real counts are memoised per range. Splitting a range picks its cut points with an estimate
    (characters times the range's token density) and confirms each part with a real count.
    """

    def __init__(
        self,
        lines: list[str],
        counter: TokenCounter,
        *,
        max_tokens: int,
        min_tokens: int,
        overlap_lines: int,
        window_lines: int,
    ) -> None:
        self.lines = lines
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self.overlap_lines = overlap_lines
        self.window_lines = window_lines
        self._counter = counter
        self._counts: dict[tuple[int, int], int] = {}
        self._contents: dict[tuple[int, int], str] = {}
        self._chars: list[int] | None = None
        # Rows holding more than whitespace, ascending: blank-row questions are bisections.
        self._nonblank = list(compress(range(len(lines)), map(str.strip, lines)))

    def next_nonblank(self, row: int) -> int:
        """First non-blank row at or after ``row`` (``len(lines)`` if none)."""
        nonblank = self._nonblank
        i = bisect_left(nonblank, row)
        return nonblank[i] if i < len(nonblank) else len(self.lines)

    def prev_nonblank(self, row: int) -> int:
        """Last non-blank row at or before ``row`` (-1 if none)."""
        i = bisect_right(self._nonblank, row)
        return self._nonblank[i - 1] if i else -1

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """The range without leading and trailing blank rows, or None if it is all blank."""
        nonblank = self._nonblank
        i = bisect_left(nonblank, start)
        j = bisect_right(nonblank, end)
        if i >= j:
            return None
        return nonblank[i], nonblank[j - 1]

    def content(self, start: int, end: int) -> str:
        """Rows ``start..end`` joined by newlines (memoised: counted ranges become chunks)."""
        key = (start, end)
        text = self._contents.get(key)
        if text is None:
            text = self._contents[key] = "\n".join(self.lines[start : end + 1])
        return text

    def tokens(self, start: int, end: int) -> int:
        """Real token count of rows ``start..end`` joined by newlines (memoised)."""
        key = (start, end)
        count = self._counts.get(key)
        if count is None:
            count = self._counter.count(self.content(start, end))
            self._counts[key] = count
        return count

    def fits(self, start: int, end: int) -> bool:
        return self.tokens(start, end) <= self.max_tokens

    def density(self, start: int, end: int) -> float:
        """Tokens per character of rows ``start..end`` (from a real count)."""
        chars = self._char_prefix()
        return self.tokens(start, end) / max(1, chars[end + 1] - chars[start] - 1)

    def estimate(self, start: int, end: int, density: float) -> float:
        """Estimated tokens of rows ``start..end`` at ``density`` tokens per character."""
        chars = self._char_prefix()
        return (chars[end + 1] - chars[start] - 1) * density

    def is_trivial(self, start: int, end: int) -> bool:
        """Whether the rows hold only closers such as ``}``, ``});``, ``end`` or ``#endif``."""
        # A blank row matches too (every part of the pattern is optional).
        return all(
            _TRIVIAL.fullmatch(line.strip()) is not None for line in self.lines[start : end + 1]
        )

    def pack(
        self, start: int, end: int, cuts: Sequence[int], *, max_lines: int | None = None
    ) -> list[tuple[int, int]]:
        """Cover the non-blank rows of ``start..end`` with ranges that fit the budget.

        A range ends just before one of ``cuts`` (sorted rows where a statement starts) when
        one fits, otherwise at a line boundary within ``window_lines``; consecutive ranges share
        ``overlap_lines`` rows, but at most half of the earlier range. A single row over budget
        becomes a range of its own. ``max_lines`` caps every range (line windows for text).
        """
        trimmed = self.trim(start, end)
        if trimmed is None:
            return []
        s, last = trimmed
        density = self.density(s, last)
        parts: list[tuple[int, int]] = []
        covered = s - 1
        while True:
            if (max_lines is None or last - s < max_lines) and self._probably_fits(
                s, last, density
            ):
                parts.append((s, last))
                return parts
            first_new = self.next_nonblank(covered + 1)
            e = self._best_end(s, last, first_new, cuts, max_lines, density)
            if e is None:
                s = first_new
                e = self._best_end(s, last, first_new, cuts, max_lines, density)
                if e is None:
                    e = s
            parts.append((s, e))
            if e >= last:
                return parts
            overlap = min(self.overlap_lines, (e - s) // 2)
            covered = e
            s = self.next_nonblank(max(e + 1 - overlap, s + 1))

    def merge_small(self, pieces: list[Piece]) -> list[Piece]:
        """Merge runs of neighbouring pieces under ``min_tokens`` until a merge reaches it."""
        out: list[Piece] = []
        for piece in pieces:
            if out and self._can_merge(out[-1], piece):
                out[-1] = _merged(out[-1], piece)
            else:
                out.append(piece)
        return out

    def _can_merge(self, left: Piece, right: Piece) -> bool:
        if not (left.mergeable and right.mergeable):
            return False
        shortest = min(left.shortest, right.shortest)
        if right.end - left.start + 1 - shortest > MERGE_SLACK_LINES:
            return False
        return (
            self.tokens(left.start, left.end) < self.min_tokens
            and self.tokens(right.start, right.end) < self.min_tokens
            and self.fits(left.start, right.end)
        )

    def _probably_fits(self, start: int, end: int, density: float) -> bool:
        if self.estimate(start, end, density) > self.max_tokens * _ESTIMATE_SLACK:
            return False
        return self.fits(start, end)

    def _best_end(
        self,
        s: int,
        last: int,
        first_new: int,
        cuts: Sequence[int],
        max_lines: int | None,
        density: float,
    ) -> int | None:
        """The last row of the largest range from ``s`` that fits and covers ``first_new``.

        None when even ``s..first_new`` is over budget while ``s < first_new`` (the overlap is
        too heavy); when ``s == first_new`` a single row over budget is returned as is.
        """
        chars = self._char_prefix()
        room = self.max_tokens / density if density > 0 else float(chars[-1])
        e_est = min(bisect_right(chars, chars[s] + 1 + room) - 2, last)
        if max_lines is None:
            i = bisect_right(cuts, e_est + 1) - 1
            tries = 0
            while i >= 0 and tries < 4:
                cut = cuts[i]
                if cut <= s or cut - 1 < first_new:
                    break
                e = self.prev_nonblank(cut - 1)
                if e >= first_new and self.fits(s, e):
                    return e
                i -= 1
                tries += 1
        window = max_lines if max_lines is not None else self.window_lines
        e = min(max(e_est, first_new), last, s + window - 1)
        e = self.prev_nonblank(max(e, first_new))
        while not self.fits(s, e):
            if e <= first_new:
                return None if s < first_new else s
            shrunk = min(e - 1, s + (e - s) * 3 // 4)
            e = self.prev_nonblank(max(shrunk, first_new))
        return e

    def _char_prefix(self) -> list[int]:
        """``chars[i]``: characters before row ``i``, counting one newline per row."""
        if self._chars is None:
            chars = [0]
            total = 0
            for line in self.lines:
                total += len(line) + 1
                chars.append(total)
            self._chars = chars
        return self._chars


def _merged(left: Piece, right: Piece) -> Piece:
    if left.kind in _DEFINITION_KINDS or right.kind not in _DEFINITION_KINDS:
        kind = left.kind
    else:
        kind = right.kind
    names: list[str] = []
    for symbol in (left.symbol, right.symbol):
        for name in symbol.split(", ") if symbol else ():
            if name not in names:
                names.append(name)
    return Piece(
        start=left.start,
        end=right.end,
        kind=kind,
        symbol=", ".join(names) or None,
        mergeable=True,
        shortest=min(left.shortest, right.shortest),
    )
