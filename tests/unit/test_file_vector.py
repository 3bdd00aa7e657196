"""bench.file_vector: the file vectors of bench/README.md (round seven) are what they say:
a centroid is the file's normalised (token-weighted) mean, a synopsis names the file's path,
definitions and description (no licence, no pragma), and the prior favours the nearest file."""

from __future__ import annotations

import numpy as np
import pytest
from bench import file_vector

from codebase_mcp_search.core.models import Chunk


def chunk(path: str, content: str, symbol: str | None = None, line: int = 1) -> Chunk:
    return Chunk(
        id=f"{path}:{line}",
        repository_id="r",
        file_path=path,
        language=None,
        symbol=symbol,
        start_line=line,
        end_line=line + content.count("\n"),
        content=content,
        content_hash=f"{path}:{line}",
        token_count=len(content.split()),
    )


LICENCED = """/* Copyright Joyent, Inc. and other Node contributors.
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 */

/* Run the event loop until no handle is active. */
#include "uv.h"
"""


def test_doc_line_skips_a_licence_block_and_includes() -> None:
    assert file_vector.doc_line(chunk("core.c", LICENCED)) == (
        "Run the event loop until no handle is active."
    )
    assert file_vector.doc_line(chunk("a.c", '#include "uv.h"\nint x;')) == ""


def test_doc_line_takes_a_docstring_and_skips_pragmas() -> None:
    py = '# -*- coding: utf-8 -*-\n"""Rich text in the terminal."""\nimport os'
    assert file_vector.doc_line(chunk("rich/__init__.py", py)) == "Rich text in the terminal."
    ts = "// @ts-ignore TS6133\nimport { z } from 'zod';"
    assert file_vector.doc_line(chunk("a.test.ts", ts)) == ""


def test_synopsis_names_path_definitions_and_description() -> None:
    chunks = [
        chunk("src/unix/core.c", LICENCED, None, 1),
        chunk("src/unix/core.c", "int uv_run(uv_loop_t* l) {}", "uv_run", 7),
        chunk("src/unix/core.c", "void Loop::alive() {}", "Loop::alive", 9),
        chunk("src/unix/core.c", "int uv_run2() {}", "uv_run", 11),
    ]
    assert file_vector.synopsis_text("src/unix/core.c", chunks) == (
        "src unix core.c: uv_run alive - Run the event loop until no handle is active."
    )


def test_centroid_is_the_normalised_mean_weighted_by_tokens() -> None:
    data = {"chunks": [chunk("a.py", "x " * 3, line=1), chunk("a.py", "y", line=5)]}
    vecs = {"a.py:1": np.array([1.0, 0.0], np.float32), "a.py:5": np.array([0.0, 1.0], np.float32)}
    plain = file_vector.centroids(data, vecs, weighted=False)[("r", "a.py")]
    weighted = file_vector.centroids(data, vecs, weighted=True)[("r", "a.py")]
    assert plain == pytest.approx([2**-0.5, 2**-0.5])
    assert weighted == pytest.approx(np.array([3.0, 1.0]) / np.sqrt(10.0))


def test_scales_and_prior_favour_the_nearest_file() -> None:
    cos = {("r", "a"): 0.9, ("r", "b"): 0.8, ("r", "c"): 0.5}
    assert file_vector.scaled(cos, "minmax") == pytest.approx(
        {("r", "a"): 1.0, ("r", "b"): 0.75, ("r", "c"): 0.0}
    )
    # A fixed width: 0.1 below the best is half way, 0.4 below is nothing.
    assert file_vector.scaled(cos, "gap") == pytest.approx(
        {("r", "a"): 1.0, ("r", "b"): 0.5, ("r", "c"): 0.0}
    )
    units = {
        ("r", "a.py"): np.array([1.0, 0.0], np.float32),
        ("r", "b.py"): np.array([0.0, 1.0], np.float32),
    }
    make = file_vector.vector_prior([units], {"q": [0.8, 0.6]}, 0.3, "minmax")
    file_vector._QUERY["text"] = "q"
    factors = make([chunk("a.py", "x"), chunk("b.py", "y")], None)
    assert factors == pytest.approx({("r", "a.py"): 1.0, ("r", "b.py"): 0.7})
    file_vector._QUERY["text"] = "unknown"
    assert make([chunk("a.py", "x"), chunk("b.py", "y")], None) == {}
