"""Writes src/adapters/onnx/bert_tables.json: the character classes of ``tokenizers``' BERT
normalizer and pre-tokenizer, read from ``tokenizers`` itself (the ``hub`` extra), code point
by code point. Its Unicode tables are not Python's (they are older for some classes), so
adapters.onnx.wordpiece takes these instead of ``unicodedata`` to give the same ids.

    python scripts/gen_bert_tables.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import __version__, normalizers, pre_tokenizers

TARGET = Path(__file__).resolve().parents[1] / "src" / "adapters" / "onnx" / "bert_tables.json"


def ranges(codes: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in codes:
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def main() -> None:
    clean = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False
    )
    strip = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
    )
    lower = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True
    )
    pre = pre_tokenizers.BertPreTokenizer()
    drop, space, marks, punct = [], [], [], []
    lowercase: dict[int, str] = {}
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        cleaned = clean.normalize_str(ch)
        if cleaned == "":
            drop.append(c)
        elif cleaned == " ":
            space.append(c)
        if strip.normalize_str(ch) == "":
            marks.append(c)
        if len(pre.pre_tokenize_str(f"a{ch}b")) == 3:
            punct.append(c)
        low = lower.normalize_str(ch)
        if low != ch.lower():
            lowercase[c] = low
    tables = {
        "about": f"scripts/gen_bert_tables.py from tokenizers {__version__}: do not edit. "
        "Inclusive code point ranges of tokenizers' BertNormalizer classes (clean_text drops "
        "DROP, maps SPACE to a space; strip_accents drops MARKS after NFD) and "
        "BertPreTokenizer's (PUNCT is split off); LOWER: lowercase forms unlike Python's.",
        "DROP": ranges(drop),
        "SPACE": ranges(space),
        "MARKS": ranges(marks),
        "PUNCT": ranges(punct),
        "LOWER": {str(c): low for c, low in sorted(lowercase.items())},
    }
    TARGET.write_text(json.dumps(tables, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
