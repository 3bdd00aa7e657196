"""PathspecIgnoreRules: gitignore-syntax matching by pathspec, behind the ``IgnoreRules`` port.

pathspec's model is "a path is matched when it or a parent directory is". A differential
check against ``git ls-files`` agrees on everyday files (globs, anchored and directory
patterns, file negations, the ``*`` / ``!*/`` / ``!*.py`` whitelist) but not on every
combination of negated *directory* patterns spread over several ignore files (``!a/`` in one
file, ``b`` in another), where a file git ignores may be indexed. Which ignore file decides is
the core's policy (``core.policies.ignoring``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codebase_mcp_search.core.errors import ValidationFailed

if TYPE_CHECKING:
    import pathspec


class PathspecIgnoreMatcher:
    """One gitignore-syntax pattern list (pathspec), for paths below one directory."""

    __slots__ = ("_dirs", "_files", "_start")

    def __init__(
        self, files: pathspec.GitIgnoreSpec, dirs: pathspec.PathSpec[Any], start: int
    ) -> None:
        self._files, self._dirs, self._start = files, dirs, start

    def check(self, rel: str) -> bool | None:
        """Whether ``rel`` (``/``-terminated for a directory) is ignored; None if no rule hits."""
        spec = self._dirs if rel.endswith("/") else self._files
        return spec.check_file(rel[self._start :]).include


@dataclass(frozen=True, slots=True)
class PathspecIgnoreRules:
    """pathspec: compiles gitignore-syntax pattern lists into ``PathspecIgnoreMatcher``s.
    Stateless: any two are equal."""

    def compile(self, lines: Sequence[str], directory: str = "") -> PathspecIgnoreMatcher | None:
        """The matcher of ``lines`` for paths below ``directory``; None without a pattern."""
        import pathspec  # here: a process that scans no tree (a search) never loads it

        try:
            # GitIgnoreSpec follows git for files: a negated directory pattern does not
            # re-include a file that a file pattern ignores. For a directory itself git's rule
            # is plain "last match wins", which GitIgnoreSpec's priorities get wrong (``*``
            # then ``!*/``).
            files = pathspec.GitIgnoreSpec.from_lines(lines)
            dirs = pathspec.PathSpec.from_lines("gitignore", lines)
        except (ValueError, re.error) as e:
            # re.error: pathspec leaves a bad character range (``[z-a]``) to ``re``, whose
            # error is no ValueError; uncaught, one line of an ignore file ended the scan.
            raise ValidationFailed("patterns", list(lines), str(e)) from e
        # Blank lines and comments compile to patterns that never match (include is None).
        if all(p.include is None for p in files.patterns):
            return None
        return PathspecIgnoreMatcher(files, dirs, len(directory))
