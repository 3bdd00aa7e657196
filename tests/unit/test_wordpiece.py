"""adapters.onnx.wordpiece gives the ids ``tokenizers`` gives, for the built-in model's
tokenizer.json: on every Unicode code point, on real code, on random text mixing scripts,
special tokens and long words, with truncation; and it declines what it does not reproduce."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from codebase_mcp_search.adapters.onnx import model_files
from codebase_mcp_search.adapters.onnx.wordpiece import WordPieceTokenizer

tokenizers = pytest.importorskip("tokenizers", reason="the 'hub' extra (in 'dev') brings it")

TOKENIZER = model_files.BUILTIN_FILES / "tokenizer.json"
SRC = Path(__file__).resolve().parents[2] / "src"


def _pair(max_length: int | None = None) -> tuple[Any, WordPieceTokenizer]:
    ref = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    ref.no_padding()
    ours = WordPieceTokenizer.read(TOKENIZER.read_text())
    assert ours is not None
    if max_length is None:
        ref.no_truncation()
        ours.enable_truncation(sys.maxsize)
    else:
        ref.enable_truncation(max_length)
        ours.enable_truncation(max_length)
    return ref, ours


def _assert_same(texts: list[str], max_length: int | None = None) -> None:
    ref, ours = _pair(max_length)
    for text, a, b in zip(texts, ref.encode_batch(texts), ours.encode_batch(texts), strict=True):
        assert (b.ids, bool(b.overflowing)) == (a.ids, bool(a.overflowing)), repr(text)


@pytest.mark.slow
def test_every_code_point_between_letters() -> None:
    # Its Unicode tables are not Python's (bert_tables holds its classes): each code point
    # once, between letters, a thousand to a text.
    words = [f"a{chr(c)}b" for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    _assert_same([" ".join(words[i : i + 1000]) for i in range(0, len(words), 1000)])


def test_real_code_truncated_as_the_embedder_does() -> None:
    texts = [p.read_text() for p in sorted(SRC.rglob("*.py"))]
    chunks = [t[i : i + 2000] for t in texts for i in range(0, len(t), 2000)]
    _assert_same(chunks, max_length=256)
    _assert_same(chunks[:50], max_length=2)


def test_random_text_of_every_kind() -> None:
    rng = random.Random(35)
    pieces = [
        *("[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[SEP", "\u2028", "\x0b", "\u00a0"),
        *("\u03a3", "\u03a3\u0391\u03a3 ", "\u0130", "caf\u00e9", "\ufb01", "\u6771\u4eac"),
        *("x" * 100, "y" * 101, "\U0001f980", "\U00070f27", "\u07fd", "\x00", "\ufffd"),
    ]

    def text() -> str:
        out: list[str] = []
        for _ in range(rng.randint(0, 80)):
            r = rng.random()
            if r < 0.2:
                out.append(rng.choice(pieces))
            elif r < 0.4:
                c = rng.randint(0, sys.maxunicode)
                out.append("" if 0xD800 <= c <= 0xDFFF else chr(c))
            elif r < 0.6:
                out.append(chr(rng.randint(0x80, 0x3000)))
            else:
                out.append(chr(rng.randint(32, 126)))
        return "".join(out)

    _assert_same([text() for _ in range(5000)], max_length=128)
    _assert_same(["", " ", "a " * 400], max_length=256)


def test_the_query_copy_keeps_its_own_length() -> None:
    _, ours = _pair(16)
    copy = WordPieceTokenizer.from_str(ours.to_str())
    copy.enable_truncation(64)
    text = "word " * 40
    assert len(ours.encode(text).ids) == 16
    assert len(copy.encode(text).ids) == 42
    assert ours.truncation == {"max_length": 16}


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("normalizer", {"type": "Lowercase"}),
        ("normalizer", {"clean_text": False}),
        ("pre_tokenizer", {"type": "Whitespace"}),
        ("model", {"type": "BPE"}),
        ("post_processor", {"type": "RobertaProcessing"}),
        ("added_tokens", {"normalized": True}),
    ],
)
def test_other_configurations_are_left_to_tokenizers(where: str, change: dict[str, Any]) -> None:
    config = json.loads(TOKENIZER.read_text())
    if where == "added_tokens":
        config["added_tokens"][0] |= change
    else:
        config[where] |= change
    assert WordPieceTokenizer.read(json.dumps(config)) is None
    assert WordPieceTokenizer.read("not json") is None
