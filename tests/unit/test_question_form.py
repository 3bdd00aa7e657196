"""bench.question_form: round seven's question-form rule (bench/README.md) sorts questions by
grammar: ``how`` about the system is a mechanism question, ``how to`` / ``how do I`` a recipe,
``how many`` a degree; examples written from the rule, none from a benchmark."""

from __future__ import annotations

import pytest
from bench.question_form import CLASSES, is_mechanism, question_form


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("how does the scheduler pick the next task", "mechanism"),
        ("How are uploads streamed to disk?", "mechanism"),
        ("explain how the cache evicts entries", "mechanism"),
        ("how the lexer recovers from a bad token", "mechanism"),
        ("why does the pool reopen connections", "mechanism"),
        ("what happens when a worker dies", "mechanism"),
        ("how to read a file line by line", "recipe"),
        ("python how to sort a dict by value", "recipe"),
        ("how-to: rotate logs", "recipe"),
        ("how do I cancel a request", "recipe"),
        ("how can we batch writes", "recipe"),
        ("how many retries before giving up", "degree"),
        ("how long is a session kept", "degree"),
        ("where are sessions stored", "question"),
        ("what is the default timeout", "question"),
        ("is there a limit on body size", "question"),
        ("compute the checksum of a stream", "description"),
        ("function that parses dates", "description"),
        ("request lifecycle", "description"),
        ("SessionStore", "symbol"),
        ("pool::Connection::close", "symbol"),
    ],
)
def test_form(text: str, form: str) -> None:
    assert form in CLASSES
    assert question_form(text) == form


def test_the_nominal_rule_adds_organisation_nouns_to_mechanism_only() -> None:
    assert not is_mechanism("request lifecycle")
    assert is_mechanism("request lifecycle", nominal=True)
    assert is_mechanism("what is the plugin architecture", nominal=True)
    # A recipe or a name stays what it is.
    assert not is_mechanism("how to build a pipeline", nominal=True)
    assert not is_mechanism("Pipeline", nominal=True)
    assert is_mechanism("how does the pipeline flush") and is_mechanism(
        "how does the pipeline flush", nominal=True
    )
