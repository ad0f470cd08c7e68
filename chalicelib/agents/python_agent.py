"""The ``python`` agent adapter: call ``module:function`` in-process.

The function receives the http payload plus the forwarded ``tool_context`` under
``"tool_context"`` (it runs inside pawl, so no transport sees it) and returns the http answer
shape as a dict, or a plain ``str`` meaning ``{"output": str}``. Only deployments that set
``PAWL_ALLOW_PYTHON_AGENTS=1`` run them: importing a module runs arbitrary code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from chalicelib.agents.configs import PythonAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest
from chalicelib.agents.http_agent import forwarded_context, redact, reply_from_answer
from chalicelib.settings import get_settings

MESSAGE_CHARS = 500

AgentCallable = Callable[[dict[str, Any]], Any]


@lru_cache(maxsize=256)
def load_callable(path: str) -> AgentCallable:
    """Import ``module:function`` once per process (a failed import is retried next time)."""
    module_name, _, attribute = path.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    function: AgentCallable = target
    return function


def invoke(config: PythonAgentConfig, request: AgentRequest) -> AgentReply:
    source = f"python agent {config.callable}"
    if not get_settings().allow_python_agents:
        raise AdapterFailed(f"{source} refused: PAWL_ALLOW_PYTHON_AGENTS is not set")
    try:
        function = load_callable(config.callable)
    except Exception as exc:  # any import-time failure is this agent's failure
        raise AdapterFailed(
            f"{source} could not be loaded: {type(exc).__name__}: {exc}"[:MESSAGE_CHARS]
        ) from None
    context = forwarded_context(request.tool_context)
    payload = {**request.payload(), "tool_context": context}
    try:
        result = function(payload)
    except Exception as exc:  # the agent's own failure: a failed generation, not ours
        message = redact(f"{source} raised {type(exc).__name__}: {exc}", context.values())
        # No exception chaining: the original message may hold tool_context values.
        raise AdapterFailed(message[:MESSAGE_CHARS]) from None
    if isinstance(result, str):
        result = {"output": result}
    return reply_from_answer(result, source)
