"""What a scan learns from a file's bytes, and how it reads them safely.

Reading opens without following a final symlink when asked and never blocks on a FIFO; the
sniffing looks at the first ``SNIFF_BYTES`` for binaries and private keys, and at line lengths
for minified bundles. Paths: the root resolved once, containment checked on resolved paths.
"""

from __future__ import annotations

import codecs
import os
import re
import stat

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import SkipReason

SNIFF_BYTES = 8192
MINIFIED_MIN_BYTES = 2048
MINIFIED_LINE_BYTES = 500

# Anchored at a line start so that code which merely mentions the marker in a string literal
# (a PEM parser, say) is still indexed.
_PRIVATE_KEY = re.compile(rb"^[ \t]*-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.MULTILINE)
# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_CONTROL_BYTES = bytes([*range(0x09), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_utf8_decoder = codecs.getincrementaldecoder("utf-8")

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


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the sniffed head, or a head that is not UTF-8 and over 5% control bytes."""
    if data.find(b"\0", 0, SNIFF_BYTES) != -1:
        return True
    head = data[:SNIFF_BYTES]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if controls * 20 <= len(head):
        return False
    try:
        # Incremental, so that a character cut at the 8 KiB boundary is not an error.
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


def has_private_key(data: bytes) -> bool:
    """Whether the first ``SNIFF_BYTES`` hold a ``-----BEGIN ... PRIVATE KEY-----`` line."""
    return data.find(b"-----BEGIN", 0, SNIFF_BYTES) != -1 and bool(
        _PRIVATE_KEY.search(data, 0, SNIFF_BYTES)
    )
