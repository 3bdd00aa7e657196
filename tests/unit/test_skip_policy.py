"""The core's skip policy as pure functions: names, sizes and bytes in, a ``SkipReason`` out;
and the ignore files' precedence over any matcher."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.core.models import FileError, SkipReason
from codebase_mcp_search.core.policies import GIT_EXCLUDE, IgnoreFiles, SkipPolicy
from codebase_mcp_search.core.policies import compile_ignore_file as compile_file
from codebase_mcp_search.core.policies.secrets import (
    PUBLIC_SUFFIXES,
    opens_with_private_key,
    secret_name,
)
from codebase_mcp_search.core.policies.skipping import (
    MINIFIED_LINE_BYTES,
    MINIFIED_MIN_BYTES,
    SNIFF_BYTES,
    looks_binary,
    looks_minified,
)
from codebase_mcp_search.core.ports import IgnoreMatcher

NONE = IgnoreFiles()
MARKER = b"-----BEGIN RSA PRIVATE KEY-----"
# A path component: anything but the separator.
NAME = st.text(st.characters(blacklist_characters="/", blacklist_categories=["Cs"]), min_size=1)
SECRET_NAMES = [".env", ".env.local", "id_rsa", "id_ed25519_old", "server.pem", "a.key"]
SECRET_NAMES += ["x.p12", "x.pfx", "r.keystore", ".netrc", ".npmrc", ".pypirc"]
SECRET_NAMES += ["credentials.json", "credentials-prod.json", "secrets.yaml", "secrets.toml"]
CASES: list[Callable[[str], str]] = [str, str.upper, str.title, str.swapcase]


def repeated(piece: bytes, size: int) -> bytes:
    """``piece`` repeated to exactly ``size`` bytes (hypothesis draws small buffers)."""
    return (piece * (size // len(piece) + 1))[:size]


@given(name=NAME, suffix=st.sampled_from(PUBLIC_SUFFIXES), case=st.sampled_from(CASES))
def test_a_public_suffix_never_reads_as_secret(
    name: str, suffix: str, case: Callable[[str], str]
) -> None:
    public = name + case(suffix)
    assert not secret_name(public)
    assert not secret_name(f"deep/.aws/{public}")


@given(name=st.sampled_from(SECRET_NAMES), case=st.sampled_from(CASES), dirs=st.lists(NAME))
def test_secret_names_read_as_secret_in_any_case_and_directory(
    name: str, case: Callable[[str], str], dirs: list[str]
) -> None:
    assert secret_name("/".join([*dirs, case(name)]))


# Directories below which a name counts as a secret that would not elsewhere.
PATH_DIRS = {".kube", ".docker", ".config", "legacy_credentials"}


@given(dirs=st.lists(NAME, max_size=3), name=NAME)
def test_only_the_file_name_counts_but_below_known_directories(dirs: list[str], name: str) -> None:
    assume(PATH_DIRS.isdisjoint(d.lower() for d in dirs))
    assert secret_name("/".join([*dirs, name])) == secret_name(name)


@given(head=st.binary(max_size=SNIFF_BYTES - 1), tail=st.binary())
def test_a_nul_in_the_sniffed_head_is_binary(head: bytes, tail: bytes) -> None:
    assert looks_binary(head + b"\0" + tail)


@given(piece=st.binary(min_size=1, max_size=64), tail=st.binary())
def test_only_the_sniffed_head_counts(piece: bytes, tail: bytes) -> None:
    head = repeated(piece, SNIFF_BYTES)
    assert looks_binary(head + tail) == looks_binary(head)


@given(text=st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"])))
def test_utf8_text_without_nul_is_never_binary(text: str) -> None:
    assert not looks_binary(text.encode())
    # Control characters (the 5% rule) cannot make valid UTF-8 binary, even cut mid-character.
    assert not looks_binary(repeated(text.encode() + b"\x01", SNIFF_BYTES + 3) if text else b"")


@given(data=st.binary(max_size=MINIFIED_MIN_BYTES - 1))
def test_what_is_under_the_minified_size_is_never_minified(data: bytes) -> None:
    assert not looks_minified(data)


@given(line=st.binary(max_size=MINIFIED_LINE_BYTES - 1), eol=st.sampled_from([b"\n", b"\r"]))
def test_lines_of_at_most_the_average_are_not_minified(line: bytes, eol: bytes) -> None:
    one = line.replace(b"\n", b" ").replace(b"\r", b" ") + eol
    assert not looks_minified(one * (MINIFIED_MIN_BYTES // len(one) + 1))
    long_line = repeated(b"a", MINIFIED_LINE_BYTES) + b";" + eol
    assert looks_minified(long_line * (MINIFIED_MIN_BYTES // len(long_line) + 1))


@given(
    before=st.text(st.characters(blacklist_characters="\n", blacklist_categories=["Cs"])),
    lines=st.lists(st.text(st.characters(blacklist_categories=["Cs"]), max_size=40), max_size=5),
    indent=st.sampled_from(["", " ", "\t  "]),
)
def test_a_key_file_is_one_that_opens_with_a_key(
    before: str, lines: list[str], indent: str
) -> None:
    prefix = "".join(line.replace("\n", " ") + "\n" for line in lines).encode()
    assert opens_with_private_key(indent.encode() + MARKER)
    if prefix.removeprefix(b"\xef\xbb\xbf").strip():
        # A key after other text is redacted instead (test_secret_policy.py).
        assert not opens_with_private_key(prefix + indent.encode() + MARKER)
    if before.removeprefix("\ufeff").strip():
        assert not opens_with_private_key(before.encode() + MARKER)


@given(
    rel=st.one_of(st.sampled_from([*SECRET_NAMES, "yarn.lock", "a.min.js", "a.py"]), NAME),
    data=st.one_of(st.binary(max_size=64), st.sampled_from([MARKER + b"\n", b"x\n" + MARKER])),
)
def test_allowing_secrets_changes_nothing_but_secrets(rel: str, data: bytes) -> None:
    def answers(policy: SkipPolicy) -> list[SkipReason | None]:
        return [policy.skip_file(rel, NONE), policy.skip_target(rel), policy.skip_data(data)]

    allowed = answers(SkipPolicy(allow_secrets=True))
    for strict, lax in zip(answers(SkipPolicy()), allowed, strict=True):
        assert lax is not SkipReason.SECRET
        if strict is not SkipReason.SECRET:
            assert lax == strict


@given(size=st.integers(min_value=0, max_value=10_000), limit=st.integers(1, 10_000))
def test_too_large_is_over_the_limit(size: int, limit: int) -> None:
    expected = SkipReason.TOO_LARGE if size > limit else None
    assert SkipPolicy(max_file_bytes=limit).skip_size(size) is expected


def test_the_first_rule_that_hits_gives_the_reason() -> None:
    ignore_all = IgnoreFiles(gitignore=(Fixed(default=True),))
    policy = SkipPolicy()
    assert policy.skip_file("web/yarn.lock", ignore_all) is SkipReason.LOCK_FILE
    assert policy.skip_file("id_rsa.min.js", ignore_all) is SkipReason.MINIFIED
    assert policy.skip_file("conf/.env", ignore_all) is SkipReason.SECRET
    assert policy.skip_file("a.py", ignore_all) is SkipReason.IGNORED
    assert policy.skip_file("a.py", NONE) is None
    assert policy.skip_directory("a/node_modules/", ignore_all) is SkipReason.EXCLUDED_DIR
    assert policy.skip_directory("a/src/", ignore_all) is SkipReason.IGNORED
    # Binary before minified before a key: a NUL byte decides first.
    assert policy.skip_content(b"\0" + MARKER + b"x" * 5000) is SkipReason.BINARY
    assert policy.skip_data(b"\0" * 2_000_000) is SkipReason.TOO_LARGE


def test_a_virtualenv_is_a_directory_below_the_root_holding_pyvenv_cfg() -> None:
    policy = SkipPolicy()
    assert policy.skip_contents("tools/env/", ["lib", "pyvenv.cfg"]) is SkipReason.EXCLUDED_DIR
    assert policy.skip_contents("", ["pyvenv.cfg", "main.py"]) is None
    assert policy.skip_contents("tools/", ["pyvenv.cfg.bak"]) is None


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValidationFailed, match="positive"):
        SkipPolicy(max_file_bytes=0)
    with pytest.raises(ValidationFailed, match="one string"):
        SkipPolicy.configured(extra_excludes="*.py", rules=Rules())
    with pytest.raises(ValidationFailed, match="needs ignore rules"):
        SkipPolicy.configured(extra_excludes=["*.py"])
    with pytest.raises(ValidationFailed, match=r"extra_excludes=.*: bad line") as info:
        SkipPolicy.configured(extra_excludes=["!"], rules=Rules())
    assert info.value.rule == "bad line"
    assert SkipPolicy.configured(rules=Rules()) == SkipPolicy()


def test_configured_excludes_ignore_but_never_re_include() -> None:
    policy = SkipPolicy(excludes=Fixed({"gen.py": True, "keep.py": False}))
    ignored_by_file = IgnoreFiles(gitignore=(Fixed({"keep.py": True}),))
    assert policy.skip_file("gen.py", NONE) is SkipReason.IGNORED
    assert policy.skip_file("keep.py", ignored_by_file) is SkipReason.IGNORED
    assert policy.skip_file("keep.py", NONE) is None


# --- Ignore files: precedence through the port, with matchers of fixed answers -------------


class Fixed:
    """An ``IgnoreMatcher`` answering from a table."""

    def __init__(self, answers: dict[str, bool] | None = None, default: bool | None = None) -> None:
        self.answers, self.default = answers or {}, default

    def check(self, rel: str) -> bool | None:
        return self.answers.get(rel, self.default)


class Rules:
    """An ``IgnoreRules`` recording what it compiled; ``!`` alone is an invalid line."""

    def __init__(self) -> None:
        self.compiled: list[tuple[list[str], str]] = []

    def compile(self, lines: Sequence[str], directory: str = "") -> IgnoreMatcher | None:
        if "!" in lines:
            raise ValidationFailed("patterns", list(lines), "bad line")
        self.compiled.append((list(lines), directory))
        return Fixed() if any(line and not line.startswith("#") for line in lines) else None


def test_ignore_beats_gitignore_beats_exclude() -> None:
    files = IgnoreFiles(
        ignore=(Fixed({"a": False}),),
        gitignore=(Fixed({"a": True, "b": True, "c": False}),),
        exclude=Fixed({"a": True, "b": False, "c": True, "d": True, "e": False}),
    )
    assert [files.ignored(rel) for rel in "abcdef"] == [False, True, False, True, False, False]


def test_the_nearest_file_with_a_matching_rule_decides() -> None:
    outer, inner = Fixed({"x": True, "y": True}), Fixed({"x": False})
    files = NONE.entering(None, outer).entering(None, inner)
    assert files.gitignore == (outer, inner)
    assert not files.ignored("x")
    assert files.ignored("y")
    assert NONE.entering(None, None) is NONE


def test_an_ignore_file_is_compiled_for_its_own_directory() -> None:
    rules = Rules()
    errors: list[FileError] = []
    assert compile_file(rules, "a/b/.gitignore", b"*.log\r\nx\ry\n\xff\n", errors) is not None
    assert compile_file(rules, ".ignore", b"*.tmp\n", errors) is not None
    assert compile_file(rules, GIT_EXCLUDE, b"local/\n", errors) is not None
    assert compile_file(rules, ".gitignore", b"# nothing\n\n", errors) is None
    assert errors == []
    assert rules.compiled == [
        (["*.log", "x", "y", "\ufffd"], "a/b/"),
        (["*.tmp"], ""),
        (["local/"], ""),  # the exclude file applies from the root, not from .git/info/
        (["# nothing", ""], ""),
    ]
    assert compile_file(rules, "sub/.gitignore", b"ok\n!\n", errors) is None
    assert errors == [FileError(path="sub/.gitignore", error="invalid ignore pattern: bad line")]
