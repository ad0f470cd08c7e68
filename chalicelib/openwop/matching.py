"""``expected.match`` of an OpenWOP golden task, as a pure function (RFC 0081 §D).

- ``exact``: the output equals ``value`` (a non-string ``value`` is compared as its
  compact JSON text);
- ``contains``: the output contains ``value`` (the same stringification);
- ``json-match``: the output parses as JSON deep-equal to ``value``: key order and
  whitespace do not matter, types do (``1`` is not ``true``, ``"1"`` is not ``1``).

An output that does not parse for ``json-match`` simply does not match (score 0): the
agent answered, and the answer is wrong.
"""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()


def stringified(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def json_equal(left: Any, right: Any) -> bool:
    """Deep equality of two JSON values that, unlike ``==``, keeps bool and number apart."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and left == right


def _parsed(output: str | None, structured: Any) -> Any:
    if structured is not _MISSING:
        return structured
    try:
        return json.loads(output or "")
    except ValueError:
        return _MISSING


def matches(match: dict[str, Any], output: str | None, structured: Any = _MISSING) -> bool:
    """Whether ``output`` (or the agent's structured ``object``, when it has one) matches."""
    strategy, value = match["strategy"], match["value"]
    text = output or ""
    if strategy == "exact":
        return text == stringified(value)
    if strategy == "contains":
        return stringified(value) in text
    if strategy == "json-match":
        parsed = _parsed(output, structured)
        return parsed is not _MISSING and json_equal(parsed, value)
    raise ValueError(f"unknown match strategy {strategy!r}")


def no_structured_output() -> Any:
    """The marker for "the agent gave no structured object" (``matches``' default)."""
    return _MISSING
