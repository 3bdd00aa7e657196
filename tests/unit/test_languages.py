"""A file's language: from its name, else from the interpreter its ``#!`` line names."""

from __future__ import annotations

import pytest

from codebase_mcp_search.core.languages import language_for_file, language_for_path


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("test/install.bats", "bash"),
        ("plugins/git/git.plugin.zsh", "bash"),
        ("lib/run.sh", "bash"),
        ("src/app.ts", "typescript"),
        ("bin/tool", None),
    ],
)
def test_the_name_gives_the_language(path: str, language: str | None) -> None:
    assert language_for_path(path) == language


@pytest.mark.parametrize(
    ("first_line", "language"),
    [
        (b"#!/usr/bin/env bash", "bash"),
        (b"#!/bin/sh -e", "bash"),
        (b"#! /bin/zsh", "bash"),
        (b"#!/usr/bin/env bats", "bash"),
        (b"#!/usr/bin/python3.11 -u", "python"),
        (b"#!/usr/bin/env -S python3 -X dev", "python"),
        (b"#!/usr/bin/env LC_ALL=C node", "javascript"),
        (b"#!/usr/bin/env ruby", "ruby"),
        (b"#!/usr/bin/env lua5.4", "lua"),
        (b"#!/usr/bin/perl -w", None),
        (b"#!/usr/bin/env", None),
        (b"#!", None),
        (b"# not a shebang: /bin/bash", None),
        (b"\xef\xbb\xbf#!/bin/bash", None),
    ],
)
def test_a_script_without_a_known_name_is_read_by_its_interpreter_line(
    first_line: bytes, language: str | None
) -> None:
    assert language_for_file("bin/tool", first_line + b"\necho hi\n") == language
    assert language_for_file("bin/tool", first_line) == language


def test_the_name_wins_over_the_interpreter_line() -> None:
    assert language_for_file("notes.txt", b"#!/bin/bash\necho hi\n") == "text"
    assert language_for_file("tool.py", b"#!/bin/sh\nexec python3 $0\n") == "python"
