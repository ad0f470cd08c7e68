"""The ``python`` agent adapter: call ``module:function`` in-process.

The function receives the http payload plus the forwarded ``tool_context`` under
``"tool_context"`` (it runs inside pawl, so no transport sees it) and returns the http answer
shape as a dict, or a plain ``str`` meaning ``{"output": str}``.

Importing a module runs its code, and a callable runs inside pawl with pawl's credentials,
so no tenant chooses what runs: the operator lists the modules in
``PAWL_PYTHON_AGENT_MODULES`` (exact names; ``pkg.*`` for every module below ``pkg``). A
callable is refused at create/update *and* again at each call (the list may have shrunk)
unless its module is listed, its attribute is a public plain identifier, and the object is
defined in that module (not re-exported from elsewhere, e.g. ``from os import system``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from chalicelib.agents.configs import CALLABLE_PATH, PythonAgentConfig
from chalicelib.agents.contract import AdapterFailed, AgentReply, AgentRequest
from chalicelib.agents.http_agent import reply_from_answer
from chalicelib.outbound.redaction import redact
from chalicelib.outbound.tool_context import forwarded_context
from chalicelib.settings import get_settings

MESSAGE_CHARS = 500
ALLOW_LIST_VARIABLE = "PAWL_PYTHON_AGENT_MODULES"

AgentCallable = Callable[[dict[str, Any]], Any]


class CallableRefused(ValueError):
    """The callable is not one the operator allows (the message names why and the variable)."""


def module_allowed(module_name: str, allowed: Sequence[str]) -> bool:
    """True when ``module_name`` is listed, or is below a listed ``pkg.*``."""
    for entry in allowed:
        if entry.endswith(".*"):
            if module_name.startswith(entry[:-1]):
                return True
        elif module_name == entry:
            return True
    return False


def check_allowed(path: str) -> None:
    """Refuse ``path`` unless it is ``module:attribute`` with an allow-listed module."""
    if not CALLABLE_PATH.match(path):
        raise CallableRefused(
            f"{path!r} must be 'module:function' with a public plain identifier as the "
            "function (no '_' prefix, no dots after ':')"
        )
    module_name = path.partition(":")[0]
    if not module_allowed(module_name, get_settings().python_agent_modules):
        raise CallableRefused(
            f"module {module_name!r} is not in {ALLOW_LIST_VARIABLE}: only modules the "
            "operator lists there can back python agents"
        )


@lru_cache(maxsize=256)
def load_callable(path: str) -> AgentCallable:
    """Import ``module:function`` once per process (a failed import is retried next time)."""
    module_name, _, attribute = path.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    if getattr(target, "__module__", None) != module_name:
        raise TypeError(f"{path} is not defined in {module_name} (re-exports are refused)")
    function: AgentCallable = target
    return function


def invoke(config: PythonAgentConfig, request: AgentRequest) -> AgentReply:
    source = f"python agent {config.callable}"
    try:
        check_allowed(config.callable)
    except CallableRefused as exc:
        raise AdapterFailed(f"{source} refused: {exc}"[:MESSAGE_CHARS]) from None
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
