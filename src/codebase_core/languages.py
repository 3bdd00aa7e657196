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
    # Bats tests and zsh scripts are shell code the bash grammar reads (bats's ``@test`` lines
    # and zsh's own syntax are left as module code).
    "bats": "bash",
    "zsh": "bash",
    "ex": "elixir",
    "exs": "elixir",
    "lua": "lua",
    "dart": "dart",
    "r": "r",
    "hs": "haskell",
    "ml": "ocaml",
    # An interface (``val``, ``external``, types and module types) has a grammar of its own.
    "mli": "ocaml_interface",
    "zig": "zig",
    "erl": "erlang",
    # Headers hold records, types and macros, in the module's own syntax.
    "hrl": "erlang",
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


# Interpreters a script's ``#!`` line may name (version suffixes dropped: ``python3.11``).
INTERPRETERS: dict[str, str] = {
    "sh": "bash",
    "bash": "bash",
    "dash": "bash",
    "ksh": "bash",
    "zsh": "bash",
    "bats": "bash",
    "python": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "ruby": "ruby",
    "php": "php",
    "lua": "lua",
    "elixir": "elixir",
}
_SHEBANG_BYTES = 256


def language_for_file(path: str, data: bytes) -> str | None:
    """The language of a file from its name, else from the interpreter its ``#!`` line names.

    Scripts are often installed without an extension (``bin/deploy``); their first line says
    what runs them. The name wins when it says anything, as editors and GitHub decide.
    """
    return language_for_path(path) or _interpreter_language(data[:_SHEBANG_BYTES])


def _interpreter_language(head: bytes) -> str | None:
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        # ``env -S prog args`` or ``env NAME=value prog``: the program is the first plain word.
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1].rstrip("0123456789.")
    return INTERPRETERS.get(program)


KNOWN_LANGUAGES = frozenset(
    [*CODE_EXTENSIONS.values(), *TEXT_EXTENSIONS.values(), *FILENAMES.values()]
)
"""Every language a chunk may carry: a language filter naming another matches nothing."""
