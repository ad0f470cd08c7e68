"""The `model` agent adapter's call (to be written)."""

from __future__ import annotations

from typing import Any

from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest


def invoke(config: Any, request: AgentRequest) -> AgentReply:
    raise AdapterFailed("the model adapter cannot call agents yet")
