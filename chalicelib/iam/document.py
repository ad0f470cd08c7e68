"""The policy document: statements of effect, actions, resources and conditions.

The shape is SOAT's (``iam.md``): ``{"statement": [{"effect", "action", "resource"?,
"condition"?}]}``. Every field is checked when a document is created, so evaluation never
meets a pattern it cannot read: unknown fields, a partial wildcard, an unknown resource
type, condition operator or condition key are refused with a message naming them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from chalicelib.iam.srn import WILDCARD, InvalidSrn, check_pattern

#: ``module:Verb``; either half may be a whole-segment ``*``, or the action is ``*`` alone.
_MODULE = re.compile(r"[a-z][a-z0-9-]{0,40}")
_VERB = re.compile(r"[A-Z][A-Za-z0-9]{0,80}")

ConditionOperator = Literal["StringEquals", "StringNotEquals", "StringLike"]

RESOURCE_TYPE_KEY = "soat:ResourceType"
RESOURCE_TAG_PREFIX = "soat:ResourceTag/"
_TAG_KEY = re.compile(r"[^\s/]{1,128}")

#: Bounds that keep one document's evaluation cheap and its row well under 400 KB.
MAX_STATEMENTS = 100
MAX_PATTERNS = 100
MAX_CONDITION_VALUES = 50


def check_action_pattern(pattern: str) -> str:
    """``*``, ``module:Verb``, ``module:*`` or ``*:Verb``; a partial wildcard is refused."""
    if pattern == WILDCARD:
        return pattern
    module, sep, verb = pattern.partition(":")
    if not sep or ":" in verb:
        raise ValueError(f"action {pattern!r} is not module:Operation (or *)")
    for segment, shape, what in ((module, _MODULE, "module"), (verb, _VERB, "operation")):
        if segment == WILDCARD:
            continue
        if WILDCARD in segment:
            raise ValueError(
                f"action {pattern!r}: a wildcard must be a whole segment "
                f"({segment!r} is a partial one)"
            )
        if not shape.fullmatch(segment):
            raise ValueError(f"action {pattern!r}: {segment!r} is not a valid {what} name")
    return pattern


def _check_resource_pattern(pattern: str) -> str:
    try:
        return check_pattern(pattern)
    except InvalidSrn as exc:
        raise ValueError(str(exc)) from exc


def check_condition_key(key: str) -> str:
    """The condition keys SOAT's IAM names: ``soat:ResourceType``, ``soat:ResourceTag/<tag>``."""
    if key == RESOURCE_TYPE_KEY:
        return key
    if key.startswith(RESOURCE_TAG_PREFIX) and _TAG_KEY.fullmatch(key[len(RESOURCE_TAG_PREFIX) :]):
        return key
    raise ValueError(
        f"unknown condition key {key!r} (known: {RESOURCE_TYPE_KEY}, {RESOURCE_TAG_PREFIX}<tag>)"
    )


ActionPattern = Annotated[str, AfterValidator(check_action_pattern)]
ResourcePattern = Annotated[str, AfterValidator(_check_resource_pattern)]
ConditionKey = Annotated[str, AfterValidator(check_condition_key)]
ConditionValue = Annotated[str, Field(max_length=256)]
ConditionValues = (
    ConditionValue
    | Annotated[list[ConditionValue], Field(min_length=1, max_length=MAX_CONDITION_VALUES)]
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Statement(_Strict):
    effect: Literal["Allow", "Deny"]
    action: list[ActionPattern] = Field(
        min_length=1,
        max_length=MAX_PATTERNS,
        description="Actions the statement covers: module:Operation, module:*, *:Operation or *",
    )
    resource: list[ResourcePattern] = Field(
        default_factory=lambda: [WILDCARD],
        min_length=1,
        max_length=MAX_PATTERNS,
        description="SRNs the statement covers (srn:<project>:<type>:<id>, whole-segment *); "
        'default ["*"]',
    )
    condition: dict[ConditionOperator, dict[ConditionKey, ConditionValues]] | None = Field(
        None,
        description="operator -> {condition key -> value or values}; every entry must hold",
    )


class PolicyDocument(_Strict):
    statement: list[Statement] = Field(min_length=1, max_length=MAX_STATEMENTS)
