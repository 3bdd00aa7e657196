"""File name to language mapping (pure table, shared by scanners and chunkers)."""

from __future__ import annotations

# Languages the AST chunker understands, by extension.
CODE_EXTENSIONS: dict[str, str] = {
    "py": "python",
    "pyi": "python",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "hxx": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "kt": "kotlin",
    "kts": "kotlin",
    "swift": "swift",
    "scala": "scala",
    "sc": "scala",
    "sh": "bash",
    "bash": "bash",
    "ex": "elixir",
    "exs": "elixir",
    "lua": "lua",
    "dart": "dart",
    "r": "r",
    "hs": "haskell",
    "ml": "ocaml",
    "zig": "zig",
    "erl": "erlang",
}

# Text formats chunked by line windows; named so filters by language work for them too.
TEXT_EXTENSIONS: dict[str, str] = {
    "md": "markdown",
    "markdown": "markdown",
    "rst": "rst",
    "txt": "text",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "json": "json",
    "sql": "sql",
    "ini": "ini",
    "cfg": "ini",
    "html": "html",
    "css": "css",
    "xml": "xml",
    "proto": "protobuf",
    "tf": "terraform",
    "vue": "vue",
    "svelte": "svelte",
}

FILENAMES: dict[str, str] = {
    "Dockerfile": "dockerfile",
    "Makefile": "make",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
}

AST_LANGUAGES = frozenset(CODE_EXTENSIONS.values())


def language_for_path(path: str) -> str | None:
    """The language of a file from its name, or None when unknown."""
    name = path.rsplit("/", 1)[-1]
    if name in FILENAMES:
        return FILENAMES[name]
    if "." not in name.lstrip("."):
        return None
    ext = name.rsplit(".", 1)[-1].lower()
    return CODE_EXTENSIONS.get(ext) or TEXT_EXTENSIONS.get(ext)


KNOWN_LANGUAGES = frozenset(
    [*CODE_EXTENSIONS.values(), *TEXT_EXTENSIONS.values(), *FILENAMES.values()]
)
"""Every language a chunk may carry: a language filter naming another matches nothing."""
