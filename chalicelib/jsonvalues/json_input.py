"""The one check every JSON request body passes before its pydantic model sees it.

A body is refused with 400 ``VALIDATION_FAILED`` (naming the offending field) when it holds
anything the store could not keep or a later read could not answer:

- nesting deeper than :data:`MAX_DEPTH` (DynamoDB's own limit for a map or list). The
  depth is measured by an iterative scan *before* ``json.loads``, so a 100,000-deep
  ``[[[[`` cannot exhaust the parser's recursion;
- a lone UTF-16 surrogate (``"\\udfff"``) in any string, keys included: it is not
  Unicode, cannot be encoded as UTF-8 and so can be neither stored nor answered;
- a number DynamoDB cannot hold: ``NaN``, ``Infinity``, anything that overflows to
  infinity (``1e400``) or underflows to zero (``1e-400``), or a magnitude outside
  ``[1e-130, 1e38)``. Every number of a body is held to this rule, free-form ``metadata``
  included, so any value can become a DynamoDB number. DynamoDB itself goes to ``1e126``
  but only with 38 significant digits, a rule JSON Schema cannot state; below ``1e38``
  every integer has at most 38 digits, so the published document states this rule exactly
  (:mod:`chalicelib.jsonvalues.json_schema`).

Query parameters are held to the string rule too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from chalicelib.errors import ValidationFailed

#: DynamoDB allows 32 levels of nested maps/lists; the body object itself is level 1.
MAX_DEPTH = 32
#: Magnitudes a number may have besides 0: DynamoDB's smallest, and 10**38 (exclusive), the
#: bound under which DynamoDB's 38 significant digits hold for every integer.
MIN_MAGNITUDE = 1e-130
MAX_MAGNITUDE_EXCLUSIVE = 10**38

# A JSON string (possibly unterminated: the parser reports that) or one bracket. The
# string branch is the "unrolled loop" form, linear in the input.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_KEY_FOLLOWS = re.compile(r"\s*:")


class _Unstorable:
    """What ``NaN``, ``Infinity`` and numbers that over/underflow parse to here.

    Parsing them to a marker (not raising) lets the walk name the field they are in.
    """

    def __init__(self, literal: str) -> None:
        self.literal = literal


#: Below this an integral double is exactly an int (2**53).
_EXACT_INT = 2.0**53


def _parse_float(literal: str) -> int | float | _Unstorable:
    value = float(literal)
    mantissa = re.split("[eE]", literal, maxsplit=1)[0]
    underflowed = value == 0 and any(digit in mantissa for digit in "123456789")
    if underflowed or not math.isfinite(value):
        return _Unstorable(literal)
    # JSON (and JSON Schema, which the published document is) has one number type: 1.0 is
    # the integer 1, so a field declared integer must take it. Floats accept ints anyway.
    if value.is_integer() and abs(value) < _EXACT_INT:
        return int(value)
    return value


def parse_body(raw: bytes) -> Any:
    """The decoded body after every check above; raises :class:`ValidationFailed`."""
    return _parse(raw, _body_refusal)


def parse_line(raw: bytes) -> Any:
    """One line of a JSON Lines body, held to :func:`parse_body`'s checks; a line that does
    not parse is refused with the parser's message and the column it stopped at (``meta``
    ``column``, counted in characters from 1), not with a line number the caller knows better.
    """
    return _parse(raw, _line_refusal)


def _parse(raw: bytes, refusal: Callable[[ValueError], ValidationFailed]) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refusal(exc) from exc
    check_depth(text)
    try:
        decoded = json.loads(text, parse_constant=_Unstorable, parse_float=_parse_float)
    except ValueError as exc:
        raise refusal(exc) from exc
    check_values(decoded)
    return decoded


def _body_refusal(exc: ValueError) -> ValidationFailed:
    return ValidationFailed(f"request body is not valid JSON: {exc}", field="body")


def _line_refusal(exc: ValueError) -> ValidationFailed:
    if isinstance(exc, json.JSONDecodeError):
        # The parser's "Unterminated string starting at" already ends in "at".
        what = exc.msg.removesuffix(" at")
        return ValidationFailed(
            f"not valid JSON: {what} at column {exc.colno}", field="body", column=exc.colno
        )
    if isinstance(exc, UnicodeDecodeError):
        # The bytes before it decode (the error is the first bad one), so a character count.
        column = len(exc.object[: exc.start].decode("utf-8")) + 1
        return ValidationFailed(
            f"not valid UTF-8 at column {column} ({exc.reason})", field="body", column=column
        )
    return ValidationFailed(f"not valid JSON: {exc}", field="body")


def check_depth(text: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`, naming the top-level field it is in."""
    depth = 0
    top_field = "body"
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ValidationFailed(
                    f"{top_field} is nested deeper than {MAX_DEPTH} levels",
                    field=top_field,
                    limit=MAX_DEPTH,
                )
        elif token in "]}":
            depth -= 1
        elif depth == 1 and _KEY_FOLLOWS.match(text, match.end()):
            top_field = _key_name(token)


def _key_name(token: str) -> str:
    try:
        name = json.loads(token)
    except ValueError:
        return "body"
    return name if isinstance(name, str) and _is_unicode(name) else "body"


def check_values(value: Any, root: str = "") -> None:
    """Refuse lone surrogates and unstorable numbers anywhere in ``value``."""
    for path, node in _walk(value, root):
        if isinstance(node, str):
            if not _is_unicode(node):
                _refuse_surrogate(path)
        elif isinstance(node, _Unstorable):
            _refuse_number(path, node.literal)
        elif isinstance(node, bool):
            continue
        elif isinstance(node, int | float) and not storable_number(node):
            _refuse_number(path, repr(node))


def check_strings(params: Mapping[str, str], root: str = "") -> None:
    """Refuse a lone surrogate in a flat string mapping (query or path parameters)."""
    for name, value in params.items():
        if not (_is_unicode(name) and _is_unicode(value)):
            _refuse_surrogate(f"{root}{name}" if _is_unicode(name) else root or "query")


def storable_number(number: int | float) -> bool:
    if isinstance(number, float) and not math.isfinite(number):
        return False
    # int and float compare exactly in Python, so 10**38 bounds both without rounding.
    return number == 0 or MIN_MAGNITUDE <= abs(number) < MAX_MAGNITUDE_EXCLUSIVE


def _walk(value: Any, root: str) -> Iterator[tuple[str, Any]]:
    """Every node with its dotted path, depth-first, without recursion."""
    stack: list[tuple[str, Any]] = [(root, value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                if not _is_unicode(key):
                    _refuse_surrogate(path or "body")
                stack.append((f"{path}.{key}" if path else key, child))
        elif isinstance(node, list):
            stack.extend((f"{path}.{i}" if path else str(i), c) for i, c in enumerate(node))
        else:
            yield path or "body", node


def repaired(value: Any) -> Any:
    """``value`` with every lone surrogate (in strings and keys) replaced by U+FFFD.

    For reads of rows written before a path applied these rules: such a row must still be
    answered (a lone surrogate cannot be encoded, so answering it as stored fails), and
    the replacement character shows where the unencodable text was.
    """
    if isinstance(value, str):
        return value if _is_unicode(value) else _replace_surrogates(value)
    if isinstance(value, dict):
        return {repaired(key): repaired(child) for key, child in value.items()}
    if isinstance(value, list):
        return [repaired(child) for child in value]
    return value


def _replace_surrogates(text: str) -> str:
    # Through UTF-16: a split pair joins into its character, a lone half becomes U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_surrogate(path: str) -> None:
    raise ValidationFailed(
        f"{path} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); "
        "strings must be valid Unicode",
        field=path,
    )


def _refuse_number(path: str, literal: str) -> None:
    raise ValidationFailed(
        f"{path} is {literal}: numbers must be finite with a magnitude of 0 or in "
        "[1e-130, 1e38) (DynamoDB's number, stated exactly in the API document)",
        field=path,
    )
