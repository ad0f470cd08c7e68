"""Forwarding a run's ``tool_context`` to the far side: one ``X-Pawl-Context-<key>`` header
per key, the reserved identity keys dropped (an eval generation has no session or actor).

Agents (http, lambda, python) and http tools forward the same keys the same way, and run
start checks every key can become a header name before the run exists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

CONTEXT_HEADER_PREFIX = "X-Pawl-Context-"
#: An eval generation has no session, so these identity keys are never forwarded. Compared
#: in any casing: a key becomes a header name, and ``Session_ID`` reaches a receiver as the
#: same header as ``session_id``.
RESERVED_CONTEXT_KEYS = frozenset({"session_id", "actor_id", "actor_external_id"})
_HEADER_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_VISIBLE_ASCII = re.compile(r"^[\x20-\x7e\t]*$")


def is_reserved_context_key(key: str) -> bool:
    """Whether a ``tool_context`` key is a reserved identity key (case-insensitive)."""
    return key.lower() in RESERVED_CONTEXT_KEYS


def forwarded_context(tool_context: Mapping[str, str]) -> dict[str, str]:
    """The ``tool_context`` keys an eval generation forwards: reserved identity keys dropped,
    in any casing."""
    return {k: v for k, v in tool_context.items() if not is_reserved_context_key(k)}


def is_valid_context_key(key: str) -> bool:
    """True when ``key`` can become part of an HTTP header name."""
    return bool(_HEADER_TOKEN.match(key))


def is_valid_context_value(value: str) -> bool:
    """True when ``value`` can be sent as a header value (printable ASCII)."""
    return bool(_VISIBLE_ASCII.match(value))
