"""Search filters arrive from people and LLM clients in many spellings: one meaning each.
Context lines are the lines around a chunk. A task's fields follow the rules of its model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from codebase_mcp_search.core.errors import InvalidStatus, ValidationFailed
from codebase_mcp_search.core.models import (
    Chunk,
    SearchFilters,
    Task,
    TaskStatus,
    TaskUpdate,
    context_lines,
    split_lines,
)


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


def _sliced(text: str, start: int, end: int, n: int) -> tuple[str, str]:
    lines = split_lines(text)
    return "\n".join(lines[max(0, start - 1 - n) : max(0, start - 1)]), "\n".join(
        lines[end : end + n]
    )


# Few distinct lines, so that a chunk's text often occurs elsewhere in the file too.
_LINES = st.lists(st.sampled_from(["", "x", "y = 1", "  x", "def f():", "\f", "z\r"]), max_size=30)


@given(lines=_LINES, trailing=st.booleans(), data=st.data())
def test_context_lines_are_the_lines_around_the_chunk(
    lines: list[str], trailing: bool, data: st.DataObject
) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    numbered = split_lines(text)
    if not numbered:
        return
    start = data.draw(st.integers(1, len(numbered)))
    end = data.draw(st.integers(start, len(numbered)))
    n = data.draw(st.integers(0, 4))
    content = "\n".join(numbered[start - 1 : end])
    assert context_lines(text, content, start, end, n) == _sliced(text, start, end, n)
    assert context_lines(text, content, start, end, n, numbered) == _sliced(text, start, end, n)


@given(lines=_LINES, other=st.text(alphabet="xy\n =", max_size=20), data=st.data())
def test_context_lines_of_a_text_that_no_longer_holds_the_chunk(
    lines: list[str], other: str, data: st.DataObject
) -> None:
    # The file changed since the chunk was indexed: the same lines as before, whatever they are.
    text = "\n".join(lines)
    start = data.draw(st.integers(1, 40))
    end = data.draw(st.integers(start, 45))
    assert context_lines(text, other, start, end, 3) == _sliced(text, start, end, 3)


_NOW = datetime(2026, 1, 1, tzinfo=UTC)
_SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"title": " "}, "title=' ': must be a non-empty string of 1-200 characters"),
        ({"title": None}, "title=None: must be a non-empty string of 1-200 characters"),
        ({"title": "x" * 201}, "title='xxxxx"),
        ({"description": 3}, "description=3: must be a string"),
        ({"notes": "n" * 5001}, "must be at most 5000 characters, got 5001"),
        ({"branches": ["feat/a", "has space"]}, "branch='has space': must be a git branch"),
        ({"commits": [_SHA.upper()]}, "commit='0123456789ABCDEF"),
        ({"planning_references": ["r"] * 11}, "planning_references=['r', "),
        ({"planning_references": [""]}, "planning_references='': each item must be 1-500"),
    ],
)
def test_a_task_breaking_a_rule_raises_the_coded_error(
    fields: dict[str, Any], message: str
) -> None:
    # Not pydantic's ValidationError: the model's validators are where the task rules live,
    # and what they raise is what a client sees.
    with pytest.raises(ValidationFailed) as err:
        Task(**{"id": "t", "title": "t", "created_at": _NOW, "updated_at": _NOW, **fields})
    assert message in str(err.value) and str(err.value).startswith("VALIDATION_ERROR: ")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"title": ""}, "title='': must be a non-empty string of 1-200 characters"),
        ({"title": " "}, "title=' ': must be a non-empty string of 1-200 characters"),
        ({"description": 3}, "description=3: must be a string"),
        ({"notes": "n" * 5001}, "must be at most 5000 characters, got 5001"),
        ({"branch": "has space"}, "branch='has space': must be a git branch"),
        ({"branch": ""}, "branch='': must be a git branch"),
        ({"commit": _SHA.upper()}, "commit='0123456789ABCDEF"),
        ({"commit": _SHA, "title": "", "status": "done"}, "title='': "),
        ({}, "fields=[]: no field to change (title, description, notes, status, branch, commit)"),
    ],
)
def test_an_update_breaking_a_rule_raises_the_coded_error(
    fields: dict[str, Any], message: str
) -> None:
    """An update follows the task's rules, field by field, before the status is parsed."""
    with pytest.raises(ValidationFailed) as err:
        TaskUpdate.build(**fields)
    assert message in str(err.value) and str(err.value).startswith("VALIDATION_ERROR: ")


def test_a_task_status_is_parsed_by_its_one_rule() -> None:
    task = Task(id="t", title="t", status="pending", created_at=_NOW, updated_at=_NOW)
    assert task.status is TaskStatus.NEED_TO_BE_DONE
    with pytest.raises(InvalidStatus, match="Invalid status: done"):
        Task(id="t", title="t", status="done", created_at=_NOW, updated_at=_NOW)


_CHUNK_FIELDS = st.fixed_dictionaries(
    {
        "id": st.text(max_size=8),
        "repository_id": st.text(max_size=8),
        "file_path": st.text(min_size=1, max_size=12),
        "language": st.none() | st.sampled_from(["python", "go"]),
        "symbol": st.none() | st.text(max_size=8),
        "kind": st.none() | st.sampled_from(["function", "class"]),
        "start_line": st.integers(1, 50),
        "end_line": st.integers(1, 50),
        "content": st.text(max_size=20),
        "content_hash": st.text(max_size=8),
        "token_count": st.integers(0, 50),
    }
)


@given(_CHUNK_FIELDS)
def test_a_trusted_chunk_is_the_validated_chunk(fields: dict[str, Any]) -> None:
    """``FrozenModel.trusted`` skips pydantic's construction, not its behaviour: equality,
    hashing, dumping, copying and immutability match a validated model's."""
    validated = Chunk(**fields)
    trusted = Chunk.trusted(dict(fields))
    assert trusted == validated and validated == trusted
    assert hash(trusted) == hash(validated)
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_dump_json() == validated.model_dump_json()
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.model_copy(update={"symbol": "x"}) == validated.model_copy(
        update={"symbol": "x"}
    )
    with pytest.raises(PydanticValidationError):
        trusted.symbol = "changed"  # type: ignore[misc]


@given(_CHUNK_FIELDS, st.lists(st.integers(), max_size=3))
def test_a_chunk_from_values_in_field_order_is_the_trusted_chunk(
    fields: dict[str, Any], extra: list[int]
) -> None:
    """``trusted_values`` reads the fields by position (a row's leading columns), ignoring
    what follows them (a score), and refuses a row too short to hold every field."""
    values = [fields[name] for name in Chunk.model_fields]
    assert Chunk.trusted_values([*values, *extra]) == Chunk.trusted(dict(fields))
    assert Chunk.trusted_values(values).model_fields_set == set(Chunk.model_fields)
    with pytest.raises(ValueError, match="values for its fields"):
        Chunk.trusted_values(values[:-1])
