"""What a scan leaves out by name and by ignore file: the built-in exclusions, the
gitignore-syntax pattern lists, their precedence, and secret-looking file names.

See ``adapters.filesystem.source_tree`` for the rules as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pathspec

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
EXCLUDED_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pypackages__",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "dist",
        "build",
        "target",
        "out",
        ".next",
        "coverage",
        ".gradle",
    }
)
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Cargo.lock",
        "uv.lock",
        "composer.lock",
        "Gemfile.lock",
        "go.sum",
    }
)
MINIFIED_SUFFIXES = (".min.js", ".min.css", ".map")

_SECRET_NAME = re.compile(
    r"\.env(?:\..*)?|.*\.(?:pem|key|p12|pfx|keystore)|id_(?:rsa|ed25519|ecdsa|dsa).*"
    r"|\.netrc|\.npmrc|\.pypirc|credentials.*\.json|secrets\.(?:ya?ml|json|toml)",
    re.IGNORECASE,
)
# Public halves and templates of secret-looking names (.env.example, id_rsa.pub).
_PUBLIC_SUFFIXES = (".pub", ".example", ".sample", ".template")


class Patterns:
    """One gitignore-syntax pattern list, applying to paths below the prefix of length ``start``."""

    __slots__ = ("_dirs", "_files", "start")

    def __init__(self, lines: Sequence[str], start: int = 0) -> None:
        self.start = start
        # GitIgnoreSpec follows git for files: a negated directory pattern does not re-include a
        # file that a file pattern ignores. For a directory itself git's rule is plain "last
        # match wins", which GitIgnoreSpec's priorities get wrong (``*`` then ``!*/``).
        self._files = pathspec.GitIgnoreSpec.from_lines(lines)
        self._dirs = pathspec.PathSpec.from_lines("gitignore", lines)

    def __bool__(self) -> bool:
        return len(self._files) > 0

    def check(self, rel: str) -> bool | None:
        """Whether ``rel`` (``/``-terminated for a directory) is ignored; None if no rule hits."""
        spec = self._dirs if rel.endswith("/") else self._files
        return spec.check_file(rel[self.start :]).include


@dataclass(frozen=True, slots=True)
class Rules:
    """The ignore files in force in one directory, outermost first."""

    ignore: tuple[Patterns, ...]
    gitignore: tuple[Patterns, ...]
    exclude: Patterns | None

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` is ignored, with ripgrep's precedence (see the module doc)."""
        for layer in (self.ignore, self.gitignore):
            for patterns in reversed(layer):
                hit = patterns.check(rel)
                if hit is not None:
                    return hit
        return self.exclude is not None and bool(self.exclude.check(rel))


def secret_name(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    if name.lower().endswith(_PUBLIC_SUFFIXES):
        return False
    return (
        _SECRET_NAME.fullmatch(name) is not None
        or rel == ".aws/credentials"
        or rel.endswith("/.aws/credentials")
    )
