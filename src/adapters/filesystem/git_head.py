"""A repository's current branch and commit, read from its git files (no ``git`` process):
``.git/HEAD``, the loose ref it names or ``packed-refs``. A worktree's ``.git`` is a file
naming its own git directory, whose ``commondir`` holds the shared refs."""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_READ = 1 << 20  # a packed-refs file of a very large repository is read up to this


@dataclass(frozen=True, slots=True)
class GitHead:
    """``branch`` None: a detached HEAD; ``commit`` None: a branch without a commit yet."""

    branch: str | None
    commit: str | None


def _read(path: str, limit: int = 4096) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def git_dir(root: str) -> str | None:
    """The git directory of the work tree at ``root`` (None: not a git work tree's root)."""
    dotgit = os.path.join(root, ".git")
    if os.path.isdir(dotgit):
        return dotgit
    text = _read(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(root, target))


def _ref(gitdir: str, common: str, ref: str) -> str | None:
    for base in (gitdir, common):
        text = _read(os.path.join(base, *ref.split("/")))
        if text is not None and text.strip():
            return text.strip()
    packed = _read(os.path.join(common, "packed-refs"), MAX_READ) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and not line.startswith(("#", "^")):
            return sha
    return None


def read_head(root: str) -> GitHead | None:
    """The branch and commit checked out at ``root``, or None if it is no git work tree."""
    gitdir = git_dir(root)
    if gitdir is None:
        return None
    head = _read(os.path.join(gitdir, "HEAD"))
    if head is None:
        return None
    head = head.strip()
    common_text = _read(os.path.join(gitdir, "commondir"))
    common = gitdir
    if common_text is not None and common_text.strip():
        common = os.path.normpath(os.path.join(gitdir, common_text.strip()))
    if not head.startswith("ref:"):
        return GitHead(branch=None, commit=head or None)
    ref = head[len("ref:") :].strip()
    branch = ref.removeprefix("refs/heads/")
    return GitHead(branch=branch, commit=_ref(gitdir, common, ref))
