"""pawl's plugin API: write a scorer, an agent adapter, an event sink or a baseline rule as
one decorated function (``docs/plugins.md``).

>>> from pawl.plugins import ItemContext, scorer
>>> @scorer
... def shouts(item: ItemContext, min_bangs: int = 1) -> bool:
...     return (item.output or "").count("!") >= min_bangs

This module ships inside the Lambda package (plugins run there): it imports only
``chalicelib.plugins``, never the laptop side of ``pawl``.
"""

from chalicelib.plugins.public import (
    AdapterConfig,
    AdapterFailed,
    AgentReply,
    AgentRequest,
    ItemContext,
    LifecycleEvent,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
    Usage,
    UsageRecord,
    ValidationEnv,
    ValidationFailed,
    agent_adapter,
    baseline_validator,
    event_sink,
    hookimpl,
    scorer,
)

__all__ = [
    "AdapterConfig",
    "AdapterFailed",
    "AgentReply",
    "AgentRequest",
    "ItemContext",
    "LifecycleEvent",
    "ScoreOutcome",
    "ScorerConfig",
    "ScorerFailed",
    "ScoringEnv",
    "Usage",
    "UsageRecord",
    "ValidationEnv",
    "ValidationFailed",
    "agent_adapter",
    "baseline_validator",
    "event_sink",
    "hookimpl",
    "scorer",
]
