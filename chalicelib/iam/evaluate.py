"""Evaluating policy documents: AWS IAM's rules, on pawl's actions and SRNs.

1. Default deny: nothing matches, the answer is :attr:`Decision.IMPLICIT_DENY`.
2. Explicit deny wins: any matching ``Deny`` statement answers :attr:`Decision.EXPLICIT_DENY`,
   whatever allows.
3. Otherwise a matching ``Allow`` answers :attr:`Decision.ALLOW`.

A statement matches when one of its actions covers the action, one of its resources covers
the SRN, and every condition holds. ``context`` maps condition keys to the request's values
(a string or a list of them); ``soat:ResourceType`` is filled from the SRN. A key the
context lacks makes ``StringEquals``/``StringLike`` false and ``StringNotEquals`` true, as
in AWS.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from typing import Any

from chalicelib.iam.document import RESOURCE_TYPE_KEY, PolicyDocument, Statement
from chalicelib.iam.srn import WILDCARD, Srn, covers, parse_srn

__all__ = ["Decision", "action_matches", "decide", "names_project"]


class Decision(enum.Enum):
    ALLOW = "allow"
    EXPLICIT_DENY = "explicit_deny"
    IMPLICIT_DENY = "implicit_deny"


def decide(
    documents: Iterable[PolicyDocument],
    action: str,
    resource_srn: str,
    context: Mapping[str, Any] | None = None,
) -> Decision:
    """What ``documents`` say about ``action`` on ``resource_srn`` (an SRN; see module doc)."""
    resource = parse_srn(resource_srn)
    values = {RESOURCE_TYPE_KEY: resource.resource_type, **(context or {})}
    allowed = False
    for document in documents:
        for statement in document.statement:
            if not _statement_matches(statement, action, resource, values):
                continue
            if statement.effect == "Deny":
                return Decision.EXPLICIT_DENY
            allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def names_project(documents: Iterable[PolicyDocument], project_id: str) -> bool:
    """Whether any ``Allow`` statement could cover some resource of ``project_id``.

    The authorization edge uses it to answer a write in a project no policy names as a
    missing resource (404), not a refusal (403) that would confirm the resource exists.
    """
    return any(
        pattern is None or pattern.project_id in (WILDCARD, project_id)
        for document in documents
        for statement in document.statement
        if statement.effect == "Allow"
        for pattern in statement.parsed_resources
    )


def action_matches(pattern: str, action: str) -> bool:
    """Whether a (checked) action pattern covers ``action`` (``module:Operation``)."""
    if pattern in (WILDCARD, action):
        return True
    want_module, _, want_verb = pattern.partition(":")
    module, _, verb = action.partition(":")
    return want_module in (WILDCARD, module) and want_verb in (WILDCARD, verb)


def _statement_matches(
    statement: Statement, action: str, resource: Srn, values: Mapping[str, Any]
) -> bool:
    return (
        any(action_matches(p, action) for p in statement.action)
        and any(covers(p, resource) for p in statement.parsed_resources)
        and all(
            _condition_holds(operator, key, expected, values.get(key))
            for operator, entries in (statement.condition or {}).items()
            for key, expected in entries.items()
        )
    )


def _condition_holds(operator: str, key: str, expected: str | list[str], actual: Any) -> bool:
    wanted = [expected] if isinstance(expected, str) else expected
    present = _as_strings(actual)
    if operator == "StringEquals":
        return any(value in wanted for value in present)
    if operator == "StringNotEquals":
        return not any(value in wanted for value in present)
    if operator == "StringLike":
        return any(_glob(pattern).fullmatch(value) for pattern in wanted for value in present)
    raise ValueError(f"unknown condition operator {operator!r} on {key!r}")


def _as_strings(actual: Any) -> list[str]:
    """A context value as the strings it holds: none when absent, each one of a list."""
    if actual is None:
        return []
    if isinstance(actual, str):
        return [actual]
    if isinstance(actual, (list, tuple, set, frozenset)):
        return [v for v in actual if isinstance(v, str)]
    return [str(actual)]


def _glob(pattern: str) -> re.Pattern[str]:
    """``StringLike``: ``*`` is any run of characters, ``?`` one; nothing else is special."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)
