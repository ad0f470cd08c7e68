"""pawl: evaluations for AI agents, from Python.

The public API is what ``__all__`` lists; everything else under ``pawl`` (``pawl.cli``,
``pawl.local``, ``pawl.demo``, ``pawl.transport``, modules whose name starts with ``_``) is
pawl's own and may change without notice. The service itself (what Lambda runs) is
``chalicelib``.

- :class:`Client` / :class:`AsyncClient`: every ``/api/v1`` operation as a typed method
  named as the CLI names it (``pawl list-evals`` is ``client.list_evals()``), iterators that
  follow cursors, and :class:`ApiError` (with subclasses per status) for a refusal
  (docs/sdk.md, "Client").
- :func:`evaluate` and :class:`Verdict`: an eval as code, gated on its verdict.
- The plugin API (:mod:`pawl.plugins`): ``@pawl.scorer`` and its siblings, and the types
  a plugin receives and returns (docs/plugins.md).

Each name is imported the first time it is used (PEP 562), so ``import pawl`` costs next to
nothing, and it works where only part of the package is installed: the Lambda package
ships ``pawl/__init__.py``, ``pawl/_version.py`` and ``pawl/plugins.py`` (plugins run there)
and no client. There ``dir(pawl)`` leaves the client out, and ``pawl.Client`` (or ``from
pawl import Client``) is an ImportError that says why.
"""

from __future__ import annotations

import importlib

from pawl._version import __version__

# Not typing.TYPE_CHECKING: importing typing would be most of what `import pawl` costs
# (about 5 ms of 6); type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what type checkers and editors see; at run time see __getattr__
    from typing import Any

    from pawl.client import AsyncClient, Client
    from pawl.errors import (
        ApiError,
        AuthenticationError,
        BadRequestError,
        ConflictError,
        NotFoundError,
        PermissionDeniedError,
        RateLimitError,
        ServerUnreachable,
    )
    from pawl.evaluation import Verdict, evaluate
    from pawl.plugins import (
        AdapterFailed,
        AgentReply,
        AgentRequest,
        ItemContext,
        LifecycleEvent,
        ScoreOutcome,
        ScorerFailed,
        ScoringEnv,
        ValidationEnv,
        ValidationFailed,
        agent_adapter,
        baseline_validator,
        event_sink,
        hookimpl,
        scorer,
    )

__all__ = [
    "AdapterFailed",
    "AgentReply",
    "AgentRequest",
    "ApiError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "ItemContext",
    "LifecycleEvent",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ScoreOutcome",
    "ScorerFailed",
    "ScoringEnv",
    "ServerUnreachable",
    "ValidationEnv",
    "ValidationFailed",
    "Verdict",
    "__version__",
    "agent_adapter",
    "baseline_validator",
    "evaluate",
    "event_sink",
    "hookimpl",
    "scorer",
]

#: Where each public name lives (the module is imported on first use of the name).
_MODULE_OF: dict[str, str] = {
    "Client": "pawl.client",
    "AsyncClient": "pawl.client",
    **dict.fromkeys(
        (
            "ApiError",
            "AuthenticationError",
            "BadRequestError",
            "ConflictError",
            "NotFoundError",
            "PermissionDeniedError",
            "RateLimitError",
            "ServerUnreachable",
        ),
        "pawl.errors",
    ),
    "evaluate": "pawl.evaluation",
    "Verdict": "pawl.evaluation",
    **dict.fromkeys(
        (
            "hookimpl",
            "scorer",
            "agent_adapter",
            "event_sink",
            "baseline_validator",
            "ItemContext",
            "ScoringEnv",
            "ValidationEnv",
            "ScoreOutcome",
            "ScorerFailed",
            "ValidationFailed",
            "AgentRequest",
            "AgentReply",
            "AdapterFailed",
            "LifecycleEvent",
        ),
        "pawl.plugins",
    ),
}


def __getattr__(name: str) -> Any:
    """Import the module that holds ``name`` and hand out the name (cached in the module)."""
    module_name = _MODULE_OF.get(name)
    if module_name is None:
        raise AttributeError(f"module 'pawl' has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the module is here but something it imports is not: say that
        raise ImportError(
            f"pawl.{name} lives in {module_name}, which this installation of pawl does not "
            f"include (the Lambda package ships pawl.plugins alone)"
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names this installation has (``__all__`` less those whose module is not
    installed), so a tool that reads every name ``dir`` lists works in the Lambda package."""
    from importlib.util import find_spec

    def present(name: str) -> bool:
        module = _MODULE_OF.get(name)
        return module is None or find_spec(module) is not None

    return sorted(name for name in __all__ if present(name))
