"""How the local tree reads a file safely, and keeps to the root.

Reading opens without following a final symlink when asked and never blocks on a FIFO. Paths:
the root resolved once, containment checked on resolved paths.
"""

from __future__ import annotations

import os
import stat

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import SkipReason

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def resolve_root(root: str) -> str:
    """``root`` with its symlinks resolved; ``ValidationFailed`` unless it is a directory."""
    resolved = os.path.realpath(root) if root else ""
    if not resolved or not os.path.isdir(resolved):
        raise ValidationFailed("repo_path", root, "must be an existing directory")
    return resolved


def inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` lies below the resolved ``root``."""
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def read_regular(path: str, limit: int | None, *, follow: bool) -> bytes | None:
    """The bytes of a regular file; None for anything else or a file over ``limit`` bytes."""
    data = read_checked(path, limit, follow=follow)
    return data if isinstance(data, bytes) else None


def read_checked(path: str, limit: int | None, *, follow: bool) -> bytes | SkipReason | None:
    """``read_regular``, telling why it read nothing: None for what is not a regular file,
    ``TOO_LARGE`` for a file over ``limit`` bytes (known from the ``fstat`` the read makes
    anyway)."""
    # O_NONBLOCK: a FIFO swapped in after listing must not hang the scan.
    fd = os.open(path, _OPEN_FLAGS if follow else _OPEN_FLAGS | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is not None and st.st_size > limit:
            return SkipReason.TOO_LARGE
        parts: list[bytes] = []
        total = 0
        want = st.st_size + 1
        while limit is None or total <= limit:
            chunk = os.read(fd, want if limit is None else min(want, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            want = 1 << 16
        if limit is not None and total > limit:
            return SkipReason.TOO_LARGE  # grew past the limit since the fstat
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def reason(e: OSError) -> str:
    """An OS error as the short reason a ``FileError`` reports."""
    return e.strerror or type(e).__name__
