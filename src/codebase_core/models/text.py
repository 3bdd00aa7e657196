"""Pure text helpers: a file's lines as editors number them, the context around a chunk,
repository-relative paths and filters on them, content hashes and stable ids."""

from __future__ import annotations

import hashlib
import re
import uuid

_NAMESPACE = uuid.UUID("8b3f0c2e-6a4d-4f7e-9d8c-2b1a0e5f4c3d")


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def repository_id_for(path: str) -> str:
    """A stable id for a repository root: the same absolute path gives the same id."""
    return str(uuid.uuid5(_NAMESPACE, path))


def chunk_id_for(
    repository_id: str, file_path: str, start: int, end: int, content_hash: str
) -> str:
    """A stable chunk id, so that re-indexing identical content yields identical ids."""
    return sha256_hex(f"{repository_id}\0{file_path}\0{start}\0{end}\0{content_hash}")[:32]


def split_lines(text: str) -> list[str]:
    """A file's lines as editors, git and grep number them.

    Only ``\n``, ``\r\n`` and ``\r`` end a line; unlike ``str.splitlines`` a form feed or
    U+2028 inside a line does not, so line numbers match what a user's editor shows. A trailing
    line break adds no line.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def context_lines(
    text: str,
    content: str,
    start_line: int,
    end_line: int,
    n: int,
    lines: list[str] | None = None,
) -> tuple[str, str]:
    """The ``n`` lines of ``text`` before ``start_line`` and after ``end_line`` (1-based), each
    group joined by ``\n``: what slicing ``split_lines(text)`` gives. ``content`` is the text of
    those lines; ``lines``, ``split_lines(text)`` when the caller has it (several hits in one
    file), is sliced as is.

    Otherwise the chunk's own text is found in the file and the context read around it, so a
    hit in a large file does not split all of it; a text that does not hold ``content`` at that
    line, holds it at more than a few earlier places, or has ``\r`` line ends is split after
    all.
    """
    fast = (
        lines is None
        and bool(content)
        and "\r" not in text
        and content.count("\n") == end_line - start_line
    )
    pos = text.find(content) if fast else -1
    row = counted = 0  # line breaks in text[:counted]
    for _ in range(8):  # text that recurs more often than that: split the file after all
        if pos < 0:
            break
        row += text.count("\n", counted, pos)
        counted = pos
        if row > start_line - 1:
            pos = -1
        elif row == start_line - 1 and (pos == 0 or text[pos - 1] == "\n"):
            end = pos + len(content)
            if end == len(text) or text[end] == "\n":
                break
        if pos >= 0:
            pos = text.find(content, pos + 1)
    else:
        pos = -1
    if pos < 0:
        lines = split_lines(text) if lines is None else lines
        before_lines = lines[max(0, start_line - 1 - n) : max(0, start_line - 1)]
        return "\n".join(before_lines), "\n".join(lines[end_line : end_line + n])
    # Back n line starts from the chunk's first line, forward n line ends from its last.
    first = pos
    for _ in range(n):
        if first == 0:
            break
        first = text.rfind("\n", 0, first - 1) + 1
    before = text[first : pos - 1] if first < pos else ""
    after_start = pos + len(content) + 1  # past the chunk's last line break
    last = after_start
    for _ in range(n):
        if last >= len(text):
            break
        nl = text.find("\n", last)
        last = len(text) if nl < 0 else nl + 1
    after = text[after_start:last] if last > after_start else ""
    return before, after.removesuffix("\n")


def file_extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if "." not in name.lstrip("."):
        return ""
    return name.rsplit(".", 1)[-1].lower()


def normalise_file_type(file_type: str) -> str:
    """'.PY', ' py ' and 'py' are one extension: lowercased, without the dot."""
    return file_type.strip().lstrip(".").lower()


def normalise_directory(directory: str) -> str:
    d = directory.replace("\\", "/").strip()
    while d.startswith("./"):
        d = d[2:]
    d = d.strip("/")
    return "" if d == "." else d


_DRIVE = re.compile(r"^[A-Za-z]:/")


def absolute_directory(directory: str) -> str | None:
    """``directory`` as an absolute path ('/' separators, no trailing one), or None when it is
    relative (to a repository's root)."""
    d = directory.replace("\\", "/").strip()
    if not (d.startswith("/") or _DRIVE.match(d)):
        return None
    return d.rstrip("/") or "/"


def relative_inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` ('' for the root itself), both absolute; None when it
    lies outside. Compared as text, '/' or '\\' separated (no file system is read)."""
    p = path.replace("\\", "/").rstrip("/") or "/"
    r = root.replace("\\", "/").rstrip("/") or "/"
    if p == r:
        return ""
    prefix = r if r.endswith("/") else r + "/"
    if not p.startswith(prefix):
        return None
    rel = normalise_directory(p[len(prefix) :])
    return None if ".." in rel.split("/") else rel


def path_in_directory(path: str, directory: str) -> bool:
    """True when ``path`` lies in ``directory`` (already normalised); compared literally."""
    if directory == "":
        return True
    return path == directory or path.startswith(directory + "/")


_CALL_SUFFIX = re.compile(r"(\(\))?[!?]*$")
_QUALIFIED_PREFIX = re.compile(r"^.*(::|\.|->|\\|#)", re.DOTALL)


def last_name(name: str) -> str:
    """The last part of a qualified name: ``Sinatra::Base`` -> ``Base``, ``a.b()`` -> ``b``,
    ``Foo#empty?`` -> ``empty``."""
    return _QUALIFIED_PREFIX.sub("", _CALL_SUFFIX.sub("", name.strip(), count=1), count=1)


def symbol_parts(symbol: str | None) -> list[str]:
    """The symbols a chunk's symbol holds, as written (a merged chunk's are joined by
    ``", "``): ``"Engine, defaultValidator.Engine"`` -> ``["Engine",
    "defaultValidator.Engine"]``."""
    if not symbol:
        return []
    return [p for p in (part.strip() for part in symbol.split(",")) if p]


def symbol_names(symbol: str | None) -> list[str]:
    """The names a chunk's symbol holds: the last part of each of its symbols
    (``symbol_parts``). The Postgres store indexes the same rule in SQL (``symbol_names`` of
    migration 8)."""
    return [n for n in (last_name(p) for p in symbol_parts(symbol)) if n]
