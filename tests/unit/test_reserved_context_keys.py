"""The reserved identity keys of a ``tool_context``: one rule, case-insensitive, both where
a run starts and where an agent adapter forwards the context."""

from __future__ import annotations

import pytest

from chalicelib.agents.http_agent import forwarded_context
from chalicelib.engine.start import clean_tool_context

CONTEXT = {
    "session_id": "s0",
    "Session_ID": "s1",
    "ACTOR_ID": "a1",
    "Actor_External_Id": "x1",
    "tenant": "acme",
    "sessionid": "kept: not a reserved key",
}
KEPT = {"tenant": "acme", "sessionid": "kept: not a reserved key"}


@pytest.mark.parametrize("drop", [clean_tool_context, forwarded_context])
def test_reserved_keys_are_dropped_in_any_casing(drop: object) -> None:
    # A context key becomes a header name, and header names are case-insensitive: a
    # "Session_ID" would reach the agent as the very header "session_id" is kept out of.
    assert callable(drop)
    assert drop(dict(CONTEXT)) == KEPT
