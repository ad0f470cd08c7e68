"""One item check for every import format: a CSV row and a JSON line meet in ``item_of``."""

from __future__ import annotations

import json

import pytest

from chalicelib.api import item_lines
from chalicelib.errors import ValidationFailed
from chalicelib.jsonvalues import json_input
from pawl.cli.datasets import csv_item


def test_a_string_input_is_one_user_message() -> None:
    fields = {"input": "hi", "metadata": {"a": 1}}
    assert item_lines.normalised_fields(fields) == {
        "input": [{"role": "user", "content": "hi"}],
        "metadata": {"a": 1},
    }
    listed = {"input": [{"role": "system", "content": "s"}]}
    assert item_lines.normalised_fields(listed) is listed


@pytest.mark.parametrize(
    ("row", "line"),
    [
        ({"input": "hi", "expected_output": "yo"}, {"input": "hi", "expected_output": "yo"}),
        ({"input": "[urgent] hi", "expected_output": ""}, {"input": "[urgent] hi"}),
        (
            {"input": '[{"role": "assistant", "content": "a"}]', "metadata": '{"n": 2}'},
            {"input": [{"role": "assistant", "content": "a"}], "metadata": {"n": 2}},
        ),
        ({"input": "hi", "topic": "math"}, {"input": "hi", "metadata": {"topic": "math"}}),
    ],
)
def test_a_csv_row_and_its_json_line_are_the_same_item(row: dict[str, str], line: object) -> None:
    from_csv = item_lines.item_of(csv_item(dict(row)))
    from_jsonl = item_lines.parse_line(json.dumps(line).encode())
    assert from_csv == from_jsonl


def test_a_missing_input_is_the_same_refusal_in_both() -> None:
    refusals = []
    for attempt in (
        lambda: item_lines.item_of(csv_item({"input": "", "expected_output": "x"})),
        lambda: item_lines.parse_line(b'{"expected_output": "x"}'),
    ):
        with pytest.raises(ValidationFailed) as caught:
            attempt()
        refusals.append((caught.value.meta["field"], caught.value.message))
    assert refusals[0] == refusals[1] == ("input", "input: Field required")


def test_a_line_that_does_not_parse_names_the_column_not_a_line() -> None:
    with pytest.raises(ValidationFailed) as caught:
        json_input.parse_line(b'{"input": "x" "y"}')
    assert caught.value.message == "not valid JSON: Expecting ',' delimiter at column 15"
    assert caught.value.meta == {"field": "body", "column": 15}
    # A whole request body keeps its own wording.
    with pytest.raises(ValidationFailed) as body:
        json_input.parse_body(b'{"input": "x" "y"}')
    assert body.value.message.startswith("request body is not valid JSON")


def test_a_problem_lists_the_column_only_for_a_line_that_does_not_parse() -> None:
    syntax = ValidationFailed("not valid JSON: x at column 3", field="body", column=3)
    shape = ValidationFailed("input: Field required", field="input")
    assert item_lines.problem(4, syntax) == {
        "line": 4,
        "field": "body",
        "message": "not valid JSON: x at column 3",
        "column": 3,
    }
    assert item_lines.problem(5, shape) == {
        "line": 5,
        "field": "input",
        "message": "input: Field required",
    }
