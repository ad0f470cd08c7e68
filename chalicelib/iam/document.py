"""The policy document: statements of effect, actions, resources and conditions.

The shape is SOAT's (``iam.md``): ``{"statement": [{"effect", "action", "resource"?,
"condition"?}]}``. Every field is checked when a document is created, so evaluation never
meets a pattern it cannot read: unknown fields, a partial wildcard, an unknown resource
type, condition operator or condition key are refused with a message naming them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, WithJsonSchema

from chalicelib.iam.srn import (
    PATTERN_REGEX,
    WILDCARD,
    InvalidSrn,
    Srn,
    check_pattern,
    parse_pattern,
)

#: ``module:Verb``; either half may be a whole-segment ``*``, or the action is ``*`` alone.
_MODULE = re.compile(r"[a-z][a-z0-9-]{0,40}")
_VERB = re.compile(r"[A-Z][A-Za-z0-9]{0,80}")

#: What :func:`check_action_pattern` accepts, for the JSON Schema.
ACTION_REGEX = rf"^(\*|({_MODULE.pattern}|\*):({_VERB.pattern}|\*))$"

CONDITION_OPERATORS = ("StringEquals", "StringNotEquals", "StringLike")
ConditionOperator = Literal["StringEquals", "StringNotEquals", "StringLike"]

RESOURCE_TYPE_KEY = "soat:ResourceType"
RESOURCE_TAG_PREFIX = "soat:ResourceTag/"
_TAG_KEY = re.compile(r"[A-Za-z0-9_.:@+=-]{1,128}")
#: What :func:`check_condition_key` accepts, for the JSON Schema.
CONDITION_KEY_REGEX = rf"^(soat:ResourceType|soat:ResourceTag/{_TAG_KEY.pattern})$"

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


# The checks run as validators (their messages say what is wrong); the same rules as
# regular expressions go into the OpenAPI document.
ActionPattern = Annotated[
    str,
    AfterValidator(check_action_pattern),
    WithJsonSchema({"type": "string", "pattern": ACTION_REGEX}),
]
ResourcePattern = Annotated[
    str,
    AfterValidator(_check_resource_pattern),
    WithJsonSchema({"type": "string", "pattern": PATTERN_REGEX}),
]
ConditionKey = Annotated[str, AfterValidator(check_condition_key)]
ConditionValue = Annotated[str, Field(max_length=256)]
ConditionValues = (
    ConditionValue
    | Annotated[list[ConditionValue], Field(min_length=1, max_length=MAX_CONDITION_VALUES)]
)
_VALUES_SCHEMA: dict[str, object] = {
    "anyOf": [
        {"type": "string", "maxLength": 256},
        {
            "type": "array",
            "items": {"type": "string", "maxLength": 256},
            "minItems": 1,
            "maxItems": MAX_CONDITION_VALUES,
        },
    ]
}
_CONDITION_SCHEMA = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                operator: {
                    "type": "object",
                    "propertyNames": {"pattern": CONDITION_KEY_REGEX},
                    "additionalProperties": _VALUES_SCHEMA,
                }
                for operator in CONDITION_OPERATORS
            },
            "additionalProperties": False,
        },
        {"type": "null"},
    ]
}


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
    condition: Annotated[
        dict[ConditionOperator, dict[ConditionKey, ConditionValues]] | None,
        WithJsonSchema(_CONDITION_SCHEMA),
    ] = Field(
        None,
        exclude_if=lambda value: value is None,  # shown as written: absent, not null
        description="operator -> {condition key -> value or values}; every entry must hold",
    )
    #: ``resource`` parsed once, when the statement is validated: evaluation compares
    #: segments and never parses a pattern again.
    _parsed_resources: tuple[Srn | None, ...] = PrivateAttr(default=())

    def model_post_init(self, context: object, /) -> None:
        self._parsed_resources = tuple(parse_pattern(p) for p in self.resource)

    @property
    def parsed_resources(self) -> tuple[Srn | None, ...]:
        return self._parsed_resources


class PolicyDocument(_Strict):
    statement: list[Statement] = Field(min_length=1, max_length=MAX_STATEMENTS)
