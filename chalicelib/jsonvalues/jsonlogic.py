"""JSON Logic for scorers: shape checks at config time, evaluation at scoring time.

Evaluation uses the ``panzi-json-logic`` library. In JSON Logic an object with exactly
one key is an operation and any other object is a literal; a config-time check walks
an expression and refuses operations the library does not know, so a typo is a 400
when the eval is written rather than an errored item in every run. ``log`` is left
out: it would print item content into the worker's log.
"""

from __future__ import annotations

from typing import Any

from json_logic import jsonLogic
from json_logic.builtins import BUILTINS, to_bool

#: Operations the evaluator implements itself (they control evaluation of their arguments).
_CONTROL_OPERATIONS = frozenset(
    {"if", "?:", "and", "or", "filter", "reduce", "map", "all", "some", "none"}
)
OPERATIONS: dict[str, Any] = {name: fn for name, fn in BUILTINS.items() if name != "log"}
KNOWN_OPERATIONS = frozenset(OPERATIONS) | _CONTROL_OPERATIONS
_MAX_DEPTH = 64


def rule_problem(rule: Any, path: str = "", depth: int = 0) -> str | None:
    """The first problem with ``rule`` as ``"<path>: <what>"``, or None when it is well formed."""
    where = path or "(root)"
    if depth > _MAX_DEPTH:
        return f"{where}: nested deeper than {_MAX_DEPTH} levels"
    if isinstance(rule, list):
        for index, element in enumerate(rule):
            problem = rule_problem(element, _join(path, index), depth + 1)
            if problem:
                return problem
        return None
    if isinstance(rule, dict) and len(rule) == 1:
        operator, args = next(iter(rule.items()))
        if operator not in KNOWN_OPERATIONS:
            return f"{where}: unknown JSON Logic operation {operator!r}"
        return rule_problem(args, _join(path, operator), depth + 1)
    return None  # a literal (string, number, bool, null, or an object of 0 or 2+ keys)


def operation_problem(rule: Any) -> str | None:
    """Like :func:`rule_problem`, and the root must be an operation (a one-key object)."""
    if not (isinstance(rule, dict) and len(rule) == 1):
        return "must be a JSON Logic operation: an object with exactly one operator key"
    return rule_problem(rule)


def is_operation(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in KNOWN_OPERATIONS


def mapping_problem(mapping: dict[str, Any]) -> str | None:
    """Check a *mapping*: one operation, or an object whose every value is a rule."""
    if is_operation(mapping):
        return rule_problem(mapping)
    for key, rule in mapping.items():
        problem = rule_problem(rule, str(key))
        if problem:
            return problem
    return None


def evaluate_mapping(mapping: dict[str, Any], data: dict[str, Any]) -> Any:
    """Evaluate a checked mapping: ``{key: rule}`` -> ``{key: value}``."""
    if is_operation(mapping):
        return evaluate(mapping, data)
    return {key: evaluate(rule, data) for key, rule in mapping.items()}


def evaluate(rule: Any, data: dict[str, Any]) -> Any:
    """Apply ``rule`` to ``data`` (dotted ``var`` paths such as ``input.0.content`` work)."""
    return jsonLogic(rule, data, OPERATIONS)


def truthy(value: Any) -> bool:
    """JSON Logic truthiness (JavaScript's: ``[]``, ``""``, ``0``, ``null`` are false)."""
    return bool(to_bool(value))


def _join(path: str, part: Any) -> str:
    return f"{path}.{part}" if path else str(part)
