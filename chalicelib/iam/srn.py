"""SRNs: ``srn:<project_id>:<resource_type>:<resource_id>``, the name a policy gives a resource.

An SRN a route asks about is concrete, except that a whole segment may be ``*`` when the
question is about a kind rather than one resource (may this caller list the datasets of a
project: ``srn:proj_X:dataset:*``). A pattern in a policy may use ``*`` for any whole
segment, or be ``*`` alone; a partial wildcard (``eval_A*``) is refused, as SOAT's IAM
refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chalicelib import ids

WILDCARD = "*"
SCHEME = "srn"

#: Resource type -> the kind of id (``chalicelib.ids``) its resource id segment holds.
RESOURCE_TYPES: dict[str, str] = {
    "project": "project",
    "dataset": "dataset",
    "eval": "eval",
    "agent": "agent",
    "tool": "tool",
    "decider": "decider",
    "ai-provider": "ai_provider",
    "webhook": "webhook",
    "trigger": "trigger",
    "formation": "formation",
    "policy": "policy",
    "api-key": "api_key",
    "generation": "generation",
    "secret": "secret",
}

_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,80}")


class InvalidSrn(ValueError):
    """Text that is not an SRN (or not an SRN pattern); the message says why."""


@dataclass(frozen=True)
class Srn:
    project_id: str
    resource_type: str
    resource_id: str

    def __str__(self) -> str:
        return f"{SCHEME}:{self.project_id}:{self.resource_type}:{self.resource_id}"


def srn(project_id: str, resource_type: str, resource_id: str) -> str:
    """The SRN of one resource (or of every resource of a type: ``resource_id="*"``)."""
    return str(_checked(project_id, resource_type, resource_id, text=None))


def parse_srn(text: str) -> Srn:
    """Parse an SRN; whole-segment ``*`` is allowed, anything malformed is :class:`InvalidSrn`."""
    parts = text.split(":")
    if len(parts) != 4 or parts[0] != SCHEME:
        raise InvalidSrn(f"{text!r} is not an SRN (expected srn:<project_id>:<type>:<id>)")
    return _checked(parts[1], parts[2], parts[3], text=text)


def _checked(project_id: str, resource_type: str, resource_id: str, text: str | None) -> Srn:
    shown = text or f"{SCHEME}:{project_id}:{resource_type}:{resource_id}"
    for segment in (project_id, resource_type, resource_id):
        _check_segment(segment, shown)
    if project_id != WILDCARD and not ids.is_id("project", project_id):
        raise InvalidSrn(f"{shown!r}: {project_id!r} is not a project id (proj_...)")
    if resource_type != WILDCARD:
        kind = RESOURCE_TYPES.get(resource_type)
        if kind is None:
            known = ", ".join(sorted(RESOURCE_TYPES))
            raise InvalidSrn(f"{shown!r}: unknown resource type {resource_type!r} ({known})")
        if resource_id != WILDCARD and not ids.is_id(kind, resource_id):
            prefix = ids.PREFIXES[kind]
            raise InvalidSrn(f"{shown!r}: a {resource_type} id starts with {prefix}_")
    return Srn(project_id, resource_type, resource_id)


def _check_segment(segment: str, shown: str) -> None:
    if segment == WILDCARD:
        return
    if WILDCARD in segment:
        raise InvalidSrn(
            f"{shown!r}: a wildcard must be a whole segment ({segment!r} is a partial one)"
        )
    if not _SEGMENT.fullmatch(segment):
        raise InvalidSrn(f"{shown!r}: segment {segment!r} is empty or has characters an id has not")


def _id_regex(kind: str) -> str:
    return f"{ids.PREFIXES[kind]}_{ids.ID_BODY}"


def _pattern_regex() -> str:
    """What :func:`check_pattern` accepts, as one regular expression (for the JSON Schema)."""
    any_id = r"[A-Za-z0-9_-]{1,80}"
    typed = [r"\*:(" + any_id + r"|\*)"] + [
        f"{name}:({_id_regex(kind)}|\\*)" for name, kind in RESOURCE_TYPES.items()
    ]
    return rf"^(\*|srn:({_id_regex('project')}|\*):({'|'.join(typed)}))$"


#: A resource pattern of a policy, as a regular expression (JSON Schema ``pattern``).
PATTERN_REGEX = _pattern_regex()


def check_pattern(pattern: str) -> str:
    """A resource pattern of a policy: ``*`` alone, or an SRN with whole-segment wildcards."""
    if pattern != WILDCARD:
        parse_srn(pattern)
    return pattern


def parse_pattern(pattern: str) -> Srn | None:
    """A (checked) resource pattern, parsed once: None for ``*`` alone (every resource)."""
    return None if pattern == WILDCARD else parse_srn(pattern)


def covers(pattern: Srn | None, resource: Srn) -> bool:
    """Whether a parsed pattern covers ``resource``, segment by segment.

    A ``*`` in the pattern covers any segment; a ``*`` in the resource (a question about
    every resource of a kind) is covered only by a ``*`` in the pattern, so a policy that
    names single datasets does not grant a question about all of them.
    """
    return pattern is None or (
        pattern.project_id in (WILDCARD, resource.project_id)
        and pattern.resource_type in (WILDCARD, resource.resource_type)
        and pattern.resource_id in (WILDCARD, resource.resource_id)
    )


def matches(pattern: str, resource: Srn) -> bool:
    """Whether a (checked) resource pattern covers ``resource`` (see :func:`covers`)."""
    return covers(parse_pattern(pattern), resource)
