"""The rules of :mod:`chalicelib.jsonvalues.json_input`, stated in a request body's JSON Schema.

pydantic describes a free-form value (``dict[str, Any]``, ``Any``) as "any object" or
"anything", and a ``float`` field as any number; the server refuses numbers DynamoDB
cannot hold wherever they are. :func:`tighten` rewrites a request schema so the document
says exactly that:

- every ``number`` is 0 or has a magnitude in ``[1e-130, 1e38)``, every ``integer`` a
  magnitude under ``1e38`` (below it, DynamoDB's 38 significant digits always hold);
- every free-form value is a :data:`JSON_VALUE`: null, a boolean, a string, such a
  number, or an array/object of JSON values.

What JSON Schema cannot say is only described: the nesting limit
(:data:`json_input.MAX_DEPTH`), and that strings must be valid Unicode (JSON Schema strings
are Unicode by definition, so a lone surrogate is not a JSON Schema string at all).
"""

from __future__ import annotations

import copy
from typing import Any

from chalicelib.jsonvalues.json_input import MAX_DEPTH, MAX_MAGNITUDE_EXCLUSIVE, MIN_MAGNITUDE
from chalicelib.jsonvalues.jsonlogic import KNOWN_OPERATIONS

NUMBER_NAME = "StorableNumber"
VALUE_NAME = "JsonValue"
_REF = "#/components/schemas/{}"

#: The magnitudes :func:`json_input.storable_number` accepts.
NUMBER_RANGES: list[dict[str, Any]] = [
    {"const": 0},
    {"minimum": MIN_MAGNITUDE, "exclusiveMaximum": MAX_MAGNITUDE_EXCLUSIVE},
    {"exclusiveMinimum": -MAX_MAGNITUDE_EXCLUSIVE, "maximum": -MIN_MAGNITUDE},
]
STORABLE_NUMBER: dict[str, Any] = {
    "type": "number",
    "anyOf": NUMBER_RANGES,
    "description": "0, or a magnitude in [1e-130, 1e38): a number DynamoDB stores exactly",
}
JSON_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "string"},
        {"$ref": _REF.format(NUMBER_NAME)},
        {"type": "array", "items": {"$ref": _REF.format(VALUE_NAME)}},
        {"type": "object", "additionalProperties": {"$ref": _REF.format(VALUE_NAME)}},
    ],
    "description": f"Any JSON value whose numbers are storable, nested at most {MAX_DEPTH} deep",
}
RULE_NAME = "JsonLogicRule"
_ONE_KEY = {"type": "object", "minProperties": 1, "maxProperties": 1}
#: :func:`chalicelib.jsonvalues.jsonlogic.rule_problem` as a schema: a one-key object is an
#: operation (a known operator over rules); anything else is a literal.
JSON_LOGIC_RULE: dict[str, Any] = {
    "anyOf": [
        {"type": ["null", "boolean", "string"]},
        {"$ref": _REF.format(NUMBER_NAME)},
        {"type": "array", "items": {"$ref": _REF.format(RULE_NAME)}},
        {
            **_ONE_KEY,
            "propertyNames": {"enum": sorted(KNOWN_OPERATIONS)},
            "additionalProperties": {"$ref": _REF.format(RULE_NAME)},
        },
        {
            "type": "object",
            "not": {"minProperties": 1, "maxProperties": 1},
            "additionalProperties": {"$ref": _REF.format(VALUE_NAME)},
        },
    ],
    "description": "A JSON Logic rule: a one-key object names a known operation",
}
COMPONENTS: dict[str, dict[str, Any]] = {
    NUMBER_NAME: STORABLE_NUMBER,
    VALUE_NAME: JSON_VALUE,
    RULE_NAME: JSON_LOGIC_RULE,
}
#: For ``WithJsonSchema``: a JSON Logic operation (one known operator), a rule (not null),
#: a mapping of rules. pydantic resolves a ``$ref`` it is given among its own models, so a
#: model names a component with :data:`COMPONENT_KEY`, which :func:`tighten` turns into a ref.
COMPONENT_KEY = "x-pawl-component"
JSON_LOGIC_OPERATION: dict[str, Any] = {
    **_ONE_KEY,
    "propertyNames": {"enum": sorted(KNOWN_OPERATIONS)},
    "additionalProperties": {COMPONENT_KEY: RULE_NAME},
}
JSON_LOGIC_REF: dict[str, Any] = {COMPONENT_KEY: RULE_NAME, "not": {"type": "null"}}
JSON_LOGIC_MAPPING: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {COMPONENT_KEY: RULE_NAME},
}

#: Keywords that say nothing about a value: a schema of only these is free-form.
_ANNOTATIONS = {"type", "title", "description", "default", "examples"}


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, list):
        return set(declared)
    return {declared} if isinstance(declared, str) else set()


def _tighten_number(schema: dict[str, Any]) -> None:
    types = _types(schema)
    if types == {"integer"}:
        bound = MAX_MAGNITUDE_EXCLUSIVE
        if "maximum" not in schema and "exclusiveMaximum" not in schema:
            schema["exclusiveMaximum"] = bound
        if "minimum" not in schema and "exclusiveMinimum" not in schema:
            schema["exclusiveMinimum"] = -bound
    elif types == {"number"}:
        ranges = {"anyOf": copy.deepcopy(NUMBER_RANGES)}
        if "anyOf" in schema:
            schema.setdefault("allOf", []).append(ranges)
        else:
            schema.update(ranges)


def _free_form(schema: dict[str, Any]) -> bool:
    """``{}`` or an object with nothing said about its members."""
    said = schema.keys() - _ANNOTATIONS
    if said - {"additionalProperties"} or schema.get("additionalProperties", True) is not True:
        return False
    return _types(schema) in (set(), {"object"})


def tighten(schema: Any) -> Any:
    """``schema`` (a request body's or parameter's) with the rules above stated; in place."""
    if isinstance(schema, list):
        for entry in schema:
            tighten(entry)
        return schema
    if not isinstance(schema, dict):
        return schema
    if COMPONENT_KEY in schema:
        schema["$ref"] = _REF.format(schema.pop(COMPONENT_KEY))
        return schema
    if _free_form(schema):
        if _types(schema) == {"object"}:
            schema["additionalProperties"] = {"$ref": _REF.format(VALUE_NAME)}
        else:
            schema.update({"$ref": _REF.format(VALUE_NAME)})
        return schema
    for key, value in schema.items():
        if key in ("properties", "$defs", "patternProperties"):
            for member in value.values():
                tighten(member)
        elif key in ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf"):
            tighten(value)
    _tighten_number(schema)  # after the walk: the ranges it adds are final
    return schema
