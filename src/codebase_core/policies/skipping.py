"""What a scan leaves out of the index, and why: the rules every ``SourceTree`` applies alike.

A scan walks a repository and asks ``SkipPolicy`` about each entry, the cheap checks first:
by name, by ignore rules, by size, then by content. The first rule that hits gives the reason
(a ``.env`` named in ``.gitignore`` is a secret). Each file or directory left out is recorded
in ``ScanResult.skipped`` with its ``SkipReason``; a directory not descended into is one entry
whose path ends with ``/``. These are choices, not failures.

- VCS metadata (``.git``, ``.hg``, ``.svn``: a directory, or a worktree's ``.git`` file) is
  neither indexed nor reported: every checkout has it.
- Hard exclusions, never overridden by an ignore file (``EXCLUDED_DIR``): the built-in list of
  dependency, virtualenv, cache and build-output directories (``EXCLUDED_DIRS``, by name, at
  any depth), and any directory below the root holding a ``pyvenv.cfg``. They are hard because
  a common whitelist idiom (``*`` then ``!*/``) would otherwise re-include ``node_modules``.
- By name: lock files (``LOCK_FILE``); minified bundles ``*.min.js``, ``*.min.css`` and
  ``*.map`` (``MINIFIED``); credential files (``SECRET``): environment files, keys and
  keystores, SSH keys, login and token files (``.netrc``, ``.git-credentials``, ``.pgpass``,
  ``.docker/config.json``, ``.kube/config``, ...), credentials and secrets data
  (``credentials*.json``, ``secret.yml``, ``service-account.json``), Terraform state and
  variables, production Spring profiles, ``shadow`` and ``.htpasswd``; the full list, and
  what is never one (public halves, templates, code such as ``secrets.py``), is in
  ``secrets``. Secret names match without regard to case; the others exactly.
- Ignore rules (``IGNORED``): the configured exclude patterns (gitignore syntax, relative to
  the root), then the ignore files (``ignoring``).
- By size: a file over ``max_file_bytes`` (``TOO_LARGE``), known before it is read.
- By content: binaries (a NUL byte in the first ``SNIFF_BYTES``, or a first ``SNIFF_BYTES``
  that is not UTF-8 and is more than 5% control bytes; ``BINARY``); minified bundles by shape
  (``MINIFIED_MIN_BYTES`` or more whose lines average over ``MINIFIED_LINE_BYTES``;
  ``MINIFIED``); a key under another name: a file that opens with a
  ``-----BEGIN ... PRIVATE KEY-----`` line (``SECRET``).

A private key block anywhere else in a kept file is redacted, not skipped (``redact``; how, in
``secrets``): a test module embedding a key stays searchable, at its line numbers, without the
key. A file's ``content_hash`` is that of its bytes as redacted, so that turning
``allow_secrets`` on or off re-indexes exactly the files whose indexed text it changes.

With ``allow_secrets``, secrets by name and by content are indexed whole (and not reported).

What stays with each adapter is its I/O: how it lists directories and reads files (the local
tree: symlinks, FIFOs, containment), and what it could not read, reported in
``ScanResult.errors``.
"""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import SkipReason
from codebase_mcp_search.core.policies.ignoring import IgnoreFiles
from codebase_mcp_search.core.policies.secrets import (
    opens_with_private_key,
    redact_private_keys,
    secret_name,
)
from codebase_mcp_search.core.ports.files import IgnoreMatcher, IgnoreRules

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
VIRTUALENV_MARKER = "pyvenv.cfg"
"""A directory holding it is a virtualenv, whatever its name."""
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

SNIFF_BYTES = 8192
MINIFIED_MIN_BYTES = 2048
MINIFIED_LINE_BYTES = 500

# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_CONTROL_BYTES = bytes([*range(0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_utf8_decoder = codecs.getincrementaldecoder("utf-8")


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the sniffed head, or a head that is not UTF-8 and over 5% control bytes."""
    if data.find(b"\0", 0, SNIFF_BYTES) != -1:
        return True
    head = data[:SNIFF_BYTES]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if controls * 20 <= len(head):
        return False
    try:
        # Incremental, so that a character cut at the sniff boundary is not an error.
        _utf8_decoder().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def looks_minified(data: bytes) -> bool:
    """At least ``MINIFIED_MIN_BYTES`` whose lines average over ``MINIFIED_LINE_BYTES``."""
    if len(data) < MINIFIED_MIN_BYTES:
        return False
    unterminated = not data.endswith((b"\n", b"\r"))
    if len(data) <= MINIFIED_LINE_BYTES * (data.count(b"\n") + unterminated):
        return False
    # Classic Mac line endings: lines end with CR alone.
    return len(data) > MINIFIED_LINE_BYTES * (data.count(b"\r") + unterminated)


def unlisted(name: str) -> bool:
    """Whether an entry named ``name`` is VCS metadata: neither indexed nor reported."""
    return name in VCS_DIRS


def in_vcs_dir(rel: str) -> bool:
    """Whether the path ``rel`` (relative to the root) lies in VCS metadata."""
    return not VCS_DIRS.isdisjoint(rel.split("/"))


@dataclass(frozen=True, slots=True)
class SkipPolicy:
    """The skip rules under one configuration (see the module doc); each ``skip_*`` method
    answers with the reason to leave an entry out, or None to keep it."""

    max_file_bytes: int = defaults.MAX_FILE_BYTES
    allow_secrets: bool = defaults.ALLOW_SECRETS
    excludes: IgnoreMatcher | None = None
    """The configured exclude patterns, compiled for the root."""

    def __post_init__(self) -> None:
        if self.max_file_bytes < 1:
            raise ValidationFailed(
                "max_file_bytes", self.max_file_bytes, "must be a positive number of bytes"
            )

    @classmethod
    def configured(
        cls,
        *,
        max_file_bytes: int = defaults.MAX_FILE_BYTES,
        allow_secrets: bool = defaults.ALLOW_SECRETS,
        extra_excludes: Sequence[str] = (),
        rules: IgnoreRules | None = None,
    ) -> SkipPolicy:
        """The policy a source tree's options describe, validated (``ValidationFailed``).
        ``rules`` compiles ``extra_excludes``, and is needed only when there are some."""
        policy = cls(max_file_bytes, allow_secrets)
        if isinstance(extra_excludes, str):
            raise ValidationFailed(
                "extra_excludes", extra_excludes, "must be a list of patterns, not one string"
            )
        patterns = list(extra_excludes)
        if not patterns:
            return policy
        if rules is None:
            raise ValidationFailed(
                "extra_excludes", patterns, "needs ignore rules to compile the patterns"
            )
        try:
            excludes = rules.compile(patterns)
        except ValidationFailed as e:
            raise ValidationFailed("extra_excludes", patterns, e.rule) from e
        return dataclasses.replace(policy, excludes=excludes)

    def skip_contents(self, directory: str, names: Iterable[str]) -> SkipReason | None:
        """Why the directory ``directory`` (``/``-terminated; ``""`` for the root), listed as
        ``names``, is left out after all: a virtualenv by another name."""
        if directory and VIRTUALENV_MARKER in names:
            return SkipReason.EXCLUDED_DIR
        return None

    def skip_directory(self, rel: str, ignores: IgnoreFiles) -> SkipReason | None:
        """Why the directory ``rel`` (``/``-terminated) is not descended into."""
        if rel[:-1].rpartition("/")[2] in EXCLUDED_DIRS:
            return SkipReason.EXCLUDED_DIR
        if self.ignored(rel, ignores):
            return SkipReason.IGNORED
        return None

    def skip_file(self, rel: str, ignores: IgnoreFiles) -> SkipReason | None:
        """Why the file ``rel`` is left out by its name or the ignore rules."""
        name = rel.rpartition("/")[2]
        if name in LOCK_FILES:
            return SkipReason.LOCK_FILE
        if name.endswith(MINIFIED_SUFFIXES):
            return SkipReason.MINIFIED
        if not self.allow_secrets and secret_name(rel):
            return SkipReason.SECRET
        if self.ignored(rel, ignores):
            return SkipReason.IGNORED
        return None

    def skip_target(self, target: str) -> SkipReason | None:
        """Why a link to the file ``target`` (relative to the root), kept by its own name, is
        left out: a secret-looking target name counts as a secret."""
        if not self.allow_secrets and secret_name(target):
            return SkipReason.SECRET
        return None

    def skip_size(self, size: int) -> SkipReason | None:
        """Why a file of ``size`` bytes is left out, before reading it."""
        return SkipReason.TOO_LARGE if size > self.max_file_bytes else None

    def skip_content(self, data: bytes) -> SkipReason | None:
        """Why a file holding ``data`` (within the size limit) is left out."""
        if looks_binary(data):
            return SkipReason.BINARY
        if looks_minified(data):
            return SkipReason.MINIFIED
        if not self.allow_secrets and opens_with_private_key(data):
            return SkipReason.SECRET
        return None

    def redact(self, data: bytes) -> bytes:
        """A kept file's bytes as the index holds them (hashed, read): every private key block
        redacted, unless secrets are allowed."""
        return data if self.allow_secrets else redact_private_keys(data)

    def skip_data(self, data: bytes) -> SkipReason | None:
        """``skip_size`` then ``skip_content``, for a tree that holds the bytes already."""
        return self.skip_size(len(data)) or self.skip_content(data)

    def ignored(self, rel: str, ignores: IgnoreFiles) -> bool:
        """Whether the configured excludes or the ignore files in force leave ``rel`` out."""
        if self.excludes is not None and self.excludes.check(rel):
            return True
        return ignores.ignored(rel)
