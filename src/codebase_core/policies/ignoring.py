"""Ignore files: which apply where, and which of them decides.

A scan honours three kinds of ignore file, with ripgrep's precedence: a match in any
``.ignore`` (the nearest file with a matching rule decides, last rule wins within a file)
beats any ``.gitignore``, which beats the root's ``.git/info/exclude``. Each file applies
relative to its own directory. ``.gitignore`` files apply even outside a git checkout; the
exclude file only where the root holds a ``.git`` directory. Ignored directories are pruned,
so, as in git, a negation cannot re-include a file below an ignored directory. An ignore file
is read as UTF-8 (undecodable bytes replaced); one holding an invalid pattern applies nothing
and is reported in ``ScanResult.errors``. What an ignore file leaves out is ``IGNORED``, and so
is what the configured exclude patterns do (``skipping.SkipPolicy``), whatever the files say.

Gitignore syntax is a library's work, reached through the ``IgnoreRules`` port (pathspec, in
``adapters.filesystem``); the precedence is policy, the same for every tree, so it lives here.
"""

from __future__ import annotations

from dataclasses import dataclass

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import FileError
from codebase_mcp_search.core.ports.files import IgnoreMatcher, IgnoreRules

IGNORE_FILE = ".ignore"
GITIGNORE_FILE = ".gitignore"
GIT_EXCLUDE = ".git/info/exclude"
"""Relative to the root; read only when the root holds a ``.git`` directory."""


@dataclass(frozen=True, slots=True)
class IgnoreFiles:
    """The ignore files in force in one directory, outermost first."""

    ignore: tuple[IgnoreMatcher, ...] = ()
    gitignore: tuple[IgnoreMatcher, ...] = ()
    exclude: IgnoreMatcher | None = None

    def ignored(self, rel: str) -> bool:
        """Whether ``rel`` (``/``-terminated for a directory) is ignored, with ripgrep's
        precedence (see the module doc)."""
        for layer in (self.ignore, self.gitignore):
            for matcher in reversed(layer):
                hit = matcher.check(rel)
                if hit is not None:
                    return hit
        return self.exclude is not None and bool(self.exclude.check(rel))

    def entering(
        self, ignore: IgnoreMatcher | None, gitignore: IgnoreMatcher | None
    ) -> IgnoreFiles:
        """The ignore files in force in a directory below, given the ``.ignore`` and
        ``.gitignore`` found there (None: none, or one without patterns)."""
        if ignore is None and gitignore is None:
            return self
        return IgnoreFiles(
            self.ignore if ignore is None else (*self.ignore, ignore),
            self.gitignore if gitignore is None else (*self.gitignore, gitignore),
            self.exclude,
        )


def compile_ignore_file(
    rules: IgnoreRules, rel: str, data: bytes, errors: list[FileError]
) -> IgnoreMatcher | None:
    """The patterns of the ignore file at ``rel`` (relative to the root), holding ``data``.

    ``GIT_EXCLUDE`` applies from the root, any other file from its own directory. A file with
    an invalid pattern is reported in ``errors`` and applies none; one without patterns: None.
    """
    directory = "" if rel == GIT_EXCLUDE else rel[: rel.rfind("/") + 1]
    lines = data.decode("utf-8", errors="replace").splitlines()
    try:
        return rules.compile(lines, directory)
    except ValidationFailed as e:
        errors.append(FileError(path=rel, error=f"invalid ignore pattern: {e.rule}"))
        return None
