"""The deterministic built-in scorers as pure functions (no I/O, no clock).

Each returns a :class:`ScoreOutcome` with a binary score, or raises
:class:`ScorerFailed` when it cannot reach a verdict (errors are not zeros).
"""

from __future__ import annotations

from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from chalicelib.jsonvalues import jsonlogic
from chalicelib.scoring.contract import ItemContext, ScoreOutcome, ScorerFailed

PASS = ScoreOutcome(score=1.0, passed=True)
FAIL = ScoreOutcome(score=0.0, passed=False)


def _binary(verdict: bool) -> ScoreOutcome:
    return PASS if verdict else FAIL


def exact_match(output: str | None, expected: str | None) -> ScoreOutcome:
    """1 when the trimmed output equals the trimmed reference; no reference cannot pass."""
    if expected is None:
        return FAIL
    return _binary((output or "").strip() == expected.strip())


def contains(output: str | None, value: str, case_sensitive: bool = False) -> ScoreOutcome:
    """1 when ``value`` occurs in the output text (case-folded unless ``case_sensitive``)."""
    text = output or ""
    if not case_sensitive:
        text, value = text.casefold(), value.casefold()
    return _binary(value in text)


def json_logic(expression: dict[str, Any], item: ItemContext) -> ScoreOutcome:
    """1 when the expression is truthy over the item's variables (``object`` absent if unset)."""
    try:
        result = jsonlogic.evaluate(expression, item.as_variables())
    except Exception as exc:  # the library raises anything from ZeroDivisionError to ReferenceError
        raise ScorerFailed(
            f"json_logic expression could not be evaluated: {type(exc).__name__}: {exc}"
        ) from None
    return _binary(jsonlogic.truthy(result))


def output_schema(schema: dict[str, Any] | None, item: ItemContext) -> ScoreOutcome:
    """1 when the structured output validates against ``schema`` (else the agent's schema).

    An item with no structured output scores 0: the agent was asked for one and gave none.
    """
    effective = schema if schema is not None else item.output_schema
    if effective is None:
        raise ScorerFailed(
            "output_schema scorer has no schema: neither the scorer nor the agent carries one"
        )
    if not item.has_object or item.object is None:
        return FAIL
    try:
        validator = validator_for(effective)(effective)
        return _binary(validator.is_valid(item.object))
    except SchemaError as exc:
        raise ScorerFailed(f"output_schema scorer's schema is invalid: {exc.message}") from None
