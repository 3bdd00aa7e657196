"""BERT's WordPiece tokenizer read from a ``tokenizer.json``, in plain Python.

The built-in model (all-MiniLM-L6-v2), like most BERT-family embedding models, tokenizes with
BertNormalizer, BertPreTokenizer, WordPiece and ``[CLS] ... [SEP]``: this module does
exactly what the ``tokenizers`` package does for that configuration (the same ids: tested
against it), so the plain install needs neither ``tokenizers`` nor the Hugging Face hub
client it pulls in (about 40 MB, issue 35). Any other configuration is read by
``tokenizers`` (the ``hub`` extra): ``read`` returns None for it.

The interface is the part of ``tokenizers.Tokenizer`` the embedder uses: ``truncation``,
``enable_truncation``, ``no_padding``, ``encode``, ``encode_batch`` (encodings with ``ids``
and ``overflowing``), ``to_str`` and ``from_str``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

_CHINESE = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_SPECIAL_FLAGS = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}


# tokenizers' character classes (scripts/gen_bert_tables.py): its Unicode tables are not
# Python's, some older (unassigned code points are kept, not dropped), some newer.
TABLES = Path(__file__).parent / "bert_tables.json"


def _char_class(ranges: Iterable[Sequence[int]]) -> str:
    """A regular expression character class body holding ``ranges`` (inclusive)."""
    return "".join(
        re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges
    )


@lru_cache(maxsize=1)
def _tables() -> tuple[tuple[re.Pattern[str], ...], dict[int, str]]:
    """(chars clean_text drops, whitespace it maps to a space, CJK chars, marks strip_accents
    drops, the pre-tokenizer's words and punctuation), and the lowercase forms of tokenizers
    (char by char: no final-sigma rule) unlike Python's; built once."""
    tables = json.loads(TABLES.read_text(encoding="utf-8"))
    punct = _char_class(tables["PUNCT"])
    patterns = (
        re.compile(f"[{_char_class(tables['DROP'])}]"),
        re.compile(f"[{_char_class(tables['SPACE'])}]"),
        re.compile(f"([{_char_class(_CHINESE)}])"),
        re.compile(f"[{_char_class(tables['MARKS'])}]"),
        re.compile(f"[{punct}]|[^ {punct}]+"),
    )
    lower = {int(c): low for c, low in tables["LOWER"].items()} | {0x03A3: "\u03c3"}
    return patterns, lower


@dataclass(slots=True)
class Encoding:
    ids: list[int]
    # Non-empty when truncation cut the text (its content is not needed: one marker list).
    overflowing: list[object] = field(default_factory=list)


class WordPieceTokenizer:
    """A BERT WordPiece ``tokenizer.json`` (see the module docstring)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        normalizer = config["normalizer"]
        model = config["model"]
        self._vocab: dict[str, int] = model["vocab"]
        self._unk = self._vocab[model["unk_token"]]
        self._prefix: str = model["continuing_subword_prefix"]
        self._max_chars = int(model["max_input_chars_per_word"])
        self._chinese = bool(normalizer["handle_chinese_chars"])
        self._lowercase = bool(normalizer["lowercase"])
        accents = normalizer.get("strip_accents")
        self._strip_accents = self._lowercase if accents is None else bool(accents)
        self._cls, self._sep = _cls_sep(config["post_processor"])
        specials = sorted((t["content"] for t in config.get("added_tokens") or []), key=len)
        self._specials = {t["content"]: int(t["id"]) for t in config.get("added_tokens") or []}
        self._split = (
            re.compile("(" + "|".join(re.escape(s) for s in reversed(specials)) + ")")
            if specials
            else None
        )
        truncation = config.get("truncation")
        self._max_length: int | None = truncation["max_length"] if truncation else None
        self._words: dict[str, list[int]] = {}

    @classmethod
    def read(cls, text: str) -> WordPieceTokenizer | None:
        """The tokenizer of a ``tokenizer.json``'s text; None when it is not one this module
        reproduces exactly (then ``tokenizers`` reads it)."""
        try:
            config = json.loads(text)
            if not _supported(config):
                return None
            return cls(config)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    # --- the part of tokenizers.Tokenizer the embedder uses -----------------------------

    @property
    def truncation(self) -> dict[str, Any] | None:
        return None if self._max_length is None else {"max_length": self._max_length}

    def enable_truncation(self, max_length: int) -> None:
        self._max_length = max_length

    def no_padding(self) -> None:
        """No padding is all this tokenizer does."""

    def to_str(self) -> str:
        truncation = self.truncation
        if truncation is not None:
            truncation |= {"strategy": "LongestFirst", "stride": 0, "direction": "Right"}
        return json.dumps(self._config | {"truncation": truncation, "padding": None})

    @classmethod
    def from_str(cls, text: str) -> WordPieceTokenizer:
        tokenizer = cls.read(text)
        if tokenizer is None:
            raise ValueError("not a BERT WordPiece tokenizer.json")
        return tokenizer

    def encode(self, text: str) -> Encoding:
        ids: list[int] = []
        pieces = self._split.split(text) if self._split else [text]
        for i, piece in enumerate(pieces):
            if i % 2:
                ids.append(self._specials[piece])
            elif piece:
                for word in self._pre_tokenize(self._normalize(piece)):
                    ids += self._word_ids(word)
        overflowing: list[object] = []
        if self._max_length is not None:
            room = max(0, self._max_length - 2)
            if len(ids) > room:
                ids, overflowing = ids[:room], [True]
        return Encoding([self._cls, *ids, self._sep], overflowing)

    def encode_batch(self, texts: list[str]) -> list[Encoding]:
        return [self.encode(t) for t in texts]

    # --- BertNormalizer, BertPreTokenizer, WordPiece -------------------------------------

    def _normalize(self, text: str) -> str:
        (drop, space, chinese, marks, _), lower = _tables()
        text = space.sub(" ", drop.sub("", text))
        if self._chinese:
            text = chinese.sub(r" \1 ", text)
        if self._strip_accents:
            text = marks.sub("", unicodedata.normalize("NFD", text))
        if self._lowercase:
            text = text.translate(lower).lower()
        return text

    @staticmethod
    def _pre_tokenize(text: str) -> list[str]:
        return _tables()[0][4].findall(text)

    def _word_ids(self, word: str) -> list[int]:
        cached = self._words.get(word)
        if cached is not None:
            return cached
        ids = self._wordpiece(word)
        if len(self._words) < 200_000:
            self._words[word] = ids
        return ids

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > self._max_chars:
            return [self._unk]
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found: int | None = None
            while start < end:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self._unk]
            ids.append(found)
            start = end
        return ids


def _cls_sep(post: dict[str, Any]) -> tuple[int, int]:
    if post["type"] == "BertProcessing":
        return int(post["cls"][1]), int(post["sep"][1])
    special = post["special_tokens"]
    first, _, last = post["single"]
    return (
        int(special[first["SpecialToken"]["id"]]["ids"][0]),
        int(special[last["SpecialToken"]["id"]]["ids"][0]),
    )


def _supported(config: dict[str, Any]) -> bool:
    """Exactly the configuration this module reproduces (anything else: ``tokenizers``)."""
    normalizer = config.get("normalizer") or {}
    model = config.get("model") or {}
    post = config.get("post_processor") or {}
    pre = config.get("pre_tokenizer") or {}
    if normalizer.get("type") != "BertNormalizer" or not normalizer.get("clean_text"):
        return False
    if pre.get("type") != "BertPreTokenizer" or model.get("type") != "WordPiece":
        return False
    if post.get("type") == "TemplateProcessing":
        single = post.get("single") or []
        shape = [next(iter(part)) for part in single]
        if shape != ["SpecialToken", "Sequence", "SpecialToken"]:
            return False
        if any(
            len(post["special_tokens"][p["SpecialToken"]["id"]]["ids"]) != 1
            for p in (single[0], single[2])
        ):
            return False
    elif post.get("type") != "BertProcessing":
        return False
    added = config.get("added_tokens") or []
    # Special tokens matched in the raw text, as they are: other kinds are not reproduced.
    return all(
        t.get("special") and all(t.get(k) == v for k, v in _SPECIAL_FLAGS.items()) for t in added
    )
