"""Search filters arrive from people and LLM clients in many spellings: one meaning each."""

from __future__ import annotations

import pytest

from codebase_core.models import SearchFilters


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("src/auth", "src/auth"),
        ("src/auth/", "src/auth"),
        ("./src/auth", "src/auth"),
        ("././src/auth//", "src/auth"),
        ("src\\auth", "src/auth"),
        (" src/auth ", "src/auth"),
        (".", None),
        ("./", None),
        ("", None),
        (None, None),
    ],
)
def test_directory_spellings_are_one_directory(given: str | None, stored: str | None) -> None:
    assert SearchFilters(directory=given).directory == stored


@pytest.mark.parametrize(
    ("given", "stored"),
    [("py", "py"), (".py", "py"), ("PY", "py"), (" .Md ", "md"), ("", None), (None, None)],
)
def test_file_type_spellings_are_one_extension(given: str | None, stored: str | None) -> None:
    assert SearchFilters(file_type=given).file_type == stored


def test_no_filter_spelled_out_is_no_filter() -> None:
    assert SearchFilters(directory="./", file_type="") == SearchFilters()
