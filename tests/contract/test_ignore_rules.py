"""IgnoreRules / IgnoreMatcher contract: gitignore-syntax lists compiled for a directory, and
what a matcher answers, whatever library does the matching."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from codebase_mcp_search.adapters.filesystem import PathspecIgnoreRules
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.ports import IgnoreMatcher, IgnoreRules

FACTORIES: dict[str, Callable[[], IgnoreRules]] = {"pathspec": PathspecIgnoreRules}


@pytest.fixture(params=sorted(FACTORIES))
def rules(request: pytest.FixtureRequest) -> IgnoreRules:
    return FACTORIES[request.param]()


def compiled(rules: IgnoreRules, lines: list[str], directory: str = "") -> IgnoreMatcher:
    matcher = rules.compile(lines, directory)
    assert matcher is not None
    return matcher


def test_implements_the_ports(rules: IgnoreRules) -> None:
    assert isinstance(rules, IgnoreRules)
    assert isinstance(compiled(rules, ["*.log"]), IgnoreMatcher)


@pytest.mark.parametrize("lines", [[], [""], ["# a comment", "", "   "]])
def test_lines_without_a_pattern_compile_to_none(rules: IgnoreRules, lines: list[str]) -> None:
    assert rules.compile(lines) is None
    assert rules.compile(lines, "sub/") is None


def test_the_last_matching_pattern_wins_and_no_match_is_none(rules: IgnoreRules) -> None:
    matcher = compiled(rules, ["*.log", "!keep.log", "# *.py"])
    assert matcher.check("a.log") is True
    assert matcher.check("deep/b.log") is True
    assert matcher.check("keep.log") is False
    assert matcher.check("a.py") is None
    assert matcher.check("src/") is None


def test_directory_patterns_match_directories_only(rules: IgnoreRules) -> None:
    matcher = compiled(rules, ["gen/"])
    assert matcher.check("gen/") is True
    assert matcher.check("pkg/gen/") is True
    assert matcher.check("gen") is None  # a file named gen


def test_patterns_apply_from_their_directory(rules: IgnoreRules) -> None:
    matcher = compiled(rules, ["/local.py", "a/b.py", "*.txt"], "sub/")
    assert matcher.check("sub/local.py") is True
    assert matcher.check("sub/deeper/local.py") is None
    assert matcher.check("sub/a/b.py") is True
    assert matcher.check("sub/x/a/b.py") is None
    assert matcher.check("sub/x/notes.txt") is True


def test_a_negated_directory_pattern_does_not_reinclude_a_file(rules: IgnoreRules) -> None:
    # The whitelist idiom: ignore everything, re-include directories and Python files.
    matcher = compiled(rules, ["*", "!*/", "!*.py"])
    assert matcher.check("notes.txt") is True
    assert matcher.check("src/") is False
    assert matcher.check("src/a.py") is False
    assert matcher.check("src/a.txt") is True


# "[z-a]": a character range pathspec leaves to ``re``, which rejects it.
@pytest.mark.parametrize("bad", ["\\", "!", "[z-a]"])
def test_an_invalid_pattern_raises_validation_failed(rules: IgnoreRules, bad: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        rules.compile(["*.log", bad])
    assert info.value.rule
