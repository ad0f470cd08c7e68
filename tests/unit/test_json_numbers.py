"""JSON has one number type: an integral literal with a fraction or exponent is an int."""

from __future__ import annotations

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.jsonvalues.json_input import parse_body


def test_integral_numbers_parse_as_ints_and_the_rest_stay_floats() -> None:
    parsed = parse_body(b'{"a": 1.0, "b": 1e2, "c": 0.5, "d": -3.0, "e": 9007199254740993.0}')
    assert parsed == {"a": 1, "b": 100, "c": 0.5, "d": -3, "e": 9007199254740992.0}
    assert [type(parsed[k]) for k in "abcde"] == [int, int, float, int, float]


@pytest.mark.parametrize("literal", [b"1e400", b"-1e400", b"1e-400", b"NaN"])
def test_unstorable_numbers_are_still_refused(literal: bytes) -> None:
    with pytest.raises(ValidationFailed):
        parse_body(b'{"x": ' + literal + b"}")
