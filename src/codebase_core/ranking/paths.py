"""What a file's path says about it: which kind of file it is (the priors), and its words.

A code-seeking query wants the source that implements the behaviour. Tests, examples,
documentation, compatibility shims, vendored or generated copies, declaration stubs and
re-export barrels often hold the same words, and sometimes more of them; they rank below the
source unless the query asks for them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from enum import StrEnum

from codebase_mcp_search.core import lexical


class FileRole(StrEnum):
    SOURCE = "source"
    TEST = "test"
    EXAMPLE = "example"
    DOC = "doc"
    COMPAT = "compat"
    GENERATED = "generated"
    STUB = "stub"
    BARREL = "barrel"


_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing", "testdata"})
# xUnit's camel-case names (``ParserTests``, ``EqSuite``, ``JsonSpec``) are test classes,
# named in UpperCamelCase; a lowerCamel module (``runTest.ts``) is named after the function it
# holds, as a test runner's own source is (JavaScript marks its tests ``.test``/``.spec``).
_TEST_FILE = re.compile(
    r"^(test_.*|.*_test|.*_spec|(?=[A-Z]).*([a-z0-9]Tests?|Spec|Suite)|conftest|test_helpers?)$"
    r"|^.*\.(test|spec)$"
)
_EXAMPLE_DIRS = frozenset(
    {"example", "examples", "_example", "_examples", "sample", "samples", "demo", "demos",
     "docs_src", "doc_src", "tutorial", "tutorials"}
)  # fmt: skip
_EXAMPLE_FILE = re.compile(r"^(examples?|samples?|demo)$")
_DOC_DIRS = frozenset({"doc", "docs", "documentation"})
PROSE_EXTENSIONS = frozenset({"md", "markdown", "rst", "txt", "adoc", "asciidoc", "org", "rdoc"})
_COMPAT_DIRS = frozenset({"compat", "_compat", "legacy", "deprecated", "polyfills", "shims"})
_COMPAT_FILE = re.compile(r"^(_?compat|.*_compat|legacy|polyfills?)$")
# A folder named after a major version (``v3``): see ``superseded``.
_VERSION_FOLDER = re.compile(r"v(\d{1,3})")
_GENERATED_DIRS = frozenset(
    {"vendor", "vendored", "third_party", "thirdparty", "node_modules", "generated",
     "__generated__", "single_include", "amalgamation", "dist"}
)  # fmt: skip
_GENERATED_FILE = re.compile(r".*(\.pb|_pb2|_pb2_grpc|\.generated|\.gen|_generated|\.min)$")
_BARREL_FILES = frozenset({"__init__.py", "package-info.java", "mod.rs", "index.ts", "index.js"})
# Lines that only import or re-export: a barrel's body.
_REEXPORT_LINE = re.compile(
    r"^\s*(from\s+\S+\s+import\b|import\b|export\s+(\*|\{|type\s+\{)|pub\s+(use|mod)\b|mod\b"
    r"|use\b|__all__|require\b|#|//|/\*|\*|$)"
)


def split_path(path: str) -> tuple[list[str], str, str]:
    """(folders, file stem, extension), the extension lower-cased without its dot; a
    declaration file's stem drops ``.d`` (``index.d.ts`` -> ``index``, ``d.ts``)."""
    parts = path.replace("\\", "/").split("/")
    folders, name = parts[:-1], parts[-1]
    if name.endswith(".d.ts"):
        return folders, name[: -len(".d.ts")], "d.ts"
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return folders, name, ""
    return folders, stem, ext.lower()


def file_role(path: str, content: str | None = None) -> FileRole:
    """The kind of file ``path`` is; ``content`` (a chunk of it) tells a barrel apart from an
    ``__init__.py`` that holds real code."""
    role, may_be_barrel = _path_role(path)
    if may_be_barrel and content is not None and is_reexports(content):
        return FileRole.BARREL
    return role


@functools.lru_cache(maxsize=16_384)
def _path_role(path: str) -> tuple[FileRole, bool]:
    """The role the path alone gives, and whether it is a barrel's name."""
    folders, stem, ext = split_path(path)
    lowered = {f.lower() for f in folders}
    if ext == "d.ts" or ext == "pyi":
        return FileRole.STUB, False
    if not lowered.isdisjoint(_GENERATED_DIRS) or _GENERATED_FILE.match(stem):
        return FileRole.GENERATED, False
    if not lowered.isdisjoint(_TEST_DIRS) or _TEST_FILE.match(stem):
        return FileRole.TEST, False
    if not lowered.isdisjoint(_EXAMPLE_DIRS) or _EXAMPLE_FILE.match(stem.lower()):
        return FileRole.EXAMPLE, False
    if ext in PROSE_EXTENSIONS or not lowered.isdisjoint(_DOC_DIRS):
        return FileRole.DOC, False
    if not lowered.isdisjoint(_COMPAT_DIRS) or _COMPAT_FILE.match(stem.lower()):
        return FileRole.COMPAT, False
    name = f"{stem}.{ext}" if ext else stem
    return FileRole.SOURCE, name in _BARREL_FILES


def is_reexports(content: str) -> bool:
    """Whether every non-blank line only imports, re-exports or comments."""
    lines = [ln for ln in content.splitlines() if ln.strip()]
    return bool(lines) and all(_REEXPORT_LINE.match(ln) for ln in lines)


def superseded(files: Collection[str], asked: Collection[str]) -> set[str]:
    """The files of ``files`` under a version folder (``v3/``) when another sits under a higher
    version of the same folder (``v4/``): an old version kept beside the current one, as a
    compatibility copy is, unless ``asked`` (the query's words) names that version."""
    highest: dict[tuple[str, ...], int] = {}
    versioned: list[tuple[str, tuple[str, ...], int, str]] = []
    for f in files:
        found = _version_folder(f)
        if found is not None:
            key, n, name = found
            highest[key] = max(highest.get(key, n), n)
            versioned.append((f, key, n, name))
    return {f for f, key, n, name in versioned if n < highest[key] and name not in asked}


@functools.lru_cache(maxsize=16_384)
def _version_folder(path: str) -> tuple[tuple[str, ...], int, str] | None:
    """The first version folder of ``path``: the folders above it, its number and its name
    (lower-cased); None without one."""
    folders = path.split("/")[:-1]
    for i, folder in enumerate(folders):
        m = _VERSION_FOLDER.fullmatch(folder.lower())
        if m:
            return tuple(folders[:i]), int(m.group(1)), folder.lower()
    return None


def is_prose(path: str) -> bool:
    return split_path(path)[2] in PROSE_EXTENSIONS


def path_terms(path: str) -> frozenset[str]:
    """The lexical terms of a file's stem and of the folder holding it."""
    folders, stem, _ = split_path(path)
    parent = folders[-1] if folders else ""
    return frozenset(lexical.analyse(f"{parent} {stem}"))


def normalise_name(name: str) -> str:
    """For comparing a file stem with a name: lower-cased, without ``_`` and ``-``."""
    return name.replace("_", "").replace("-", "").lower()


@functools.lru_cache(maxsize=16_384)
def stem_names(path: str) -> frozenset[str]:
    """The forms of a file's stem that name what it defines (``json_reader.py`` and
    ``JsonReader.java`` -> ``jsonreader``; a plural ``validators.py`` -> ``validator`` too)."""
    stem = normalise_name(split_path(path)[1])
    forms = {stem}
    if len(stem) > 3 and stem.endswith("s"):
        forms.add(stem[:-1])
    return frozenset(forms)
